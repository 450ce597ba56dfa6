#include "CCryptoShim.h"
#include <openssl/opensslv.h>
int ccryptoshim_version(void) { return (int)(OPENSSL_VERSION_NUMBER >> 28); }
