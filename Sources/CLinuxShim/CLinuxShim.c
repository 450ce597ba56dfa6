#ifdef __linux__
#define _GNU_SOURCE /* accept4 */
#include "CLinuxShim.h"
#include <stdlib.h>
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

const uint32_t clinux_epoll_in = EPOLLIN;
const uint32_t clinux_epoll_out = EPOLLOUT;
const uint32_t clinux_epoll_err = EPOLLERR;
const uint32_t clinux_epoll_hup = EPOLLHUP;
const int32_t clinux_epoll_ctl_add = EPOLL_CTL_ADD;
const int32_t clinux_epoll_ctl_mod = EPOLL_CTL_MOD;
const int32_t clinux_epoll_ctl_del = EPOLL_CTL_DEL;

int clinux_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int clinux_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event = { .events = events, .data = { .u64 = token } };
    return epoll_ctl(epfd, op, fd, &event);
}

void *clinux_epoll_events_alloc(int capacity) { return calloc((size_t)capacity, sizeof(struct epoll_event)); }

void clinux_epoll_events_free(void *events) { free(events); }

int clinux_epoll_wait(int epfd, void *events, int capacity, int timeout_ms) {
    return epoll_wait(epfd, (struct epoll_event *)events, capacity, timeout_ms);
}

uint32_t clinux_epoll_event_mask(const void *events, int index) {
    return ((const struct epoll_event *)events)[index].events;
}

uint64_t clinux_epoll_event_token(const void *events, int index) {
    return ((const struct epoll_event *)events)[index].data.u64;
}

int clinux_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

int clinux_accept_nonblocking(int listen_fd) { return accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); }
int clinux_limit_malloc_arenas(int arenas) { return mallopt(M_ARENA_MAX, arenas); }

#endif
