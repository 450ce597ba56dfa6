#ifndef CLINUXSHIM_H
#define CLINUXSHIM_H

/* epoll, eventfd and accept4 for the HTTP module: Swift's Glibc module does not include
 * <sys/epoll.h> or <sys/eventfd.h>, nor the _GNU_SOURCE accept4. The struct epoll_event
 * layout (packed on x86_64) stays on this side. Empty on systems without epoll. */

#include <stdint.h>

#ifdef __linux__
extern const uint32_t clinux_epoll_in;
extern const uint32_t clinux_epoll_out;
extern const uint32_t clinux_epoll_err;
extern const uint32_t clinux_epoll_hup;
extern const int32_t clinux_epoll_ctl_add;
extern const int32_t clinux_epoll_ctl_mod;
extern const int32_t clinux_epoll_ctl_del;

/* mallopt(M_ARENA_MAX, n): <malloc.h> is not in Swift's Glibc module either. */
int clinux_limit_malloc_arenas(int arenas);

/* A close-on-exec epoll instance. */
int clinux_epoll_create(void);
int clinux_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token);

/* Room for `capacity` events; free with clinux_epoll_events_free. */
void *clinux_epoll_events_alloc(int capacity);
void clinux_epoll_events_free(void *events);
int clinux_epoll_wait(int epfd, void *events, int capacity, int timeout_ms);
uint32_t clinux_epoll_event_mask(const void *events, int index);
uint64_t clinux_epoll_event_token(const void *events, int index);

/* A non-blocking, close-on-exec eventfd. */
int clinux_eventfd(void);
/* accept4: the new socket is already non-blocking and close-on-exec. */
int clinux_accept_nonblocking(int listen_fd);
#endif

#endif
