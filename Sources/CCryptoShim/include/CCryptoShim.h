#ifndef CCRYPTOSHIM_H
#define CCRYPTOSHIM_H
#include <stddef.h>
/* Placeholder: wrappers for OpenSSL macros / variadic functions go here. */
int ccryptoshim_version(void);
#endif
