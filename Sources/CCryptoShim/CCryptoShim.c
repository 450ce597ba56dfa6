#define _GNU_SOURCE /* timegm */
#include "CCryptoShim.h"
#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#include <openssl/asn1.h>
#include <openssl/ssl.h>
#include <time.h>

int ccryptoshim_version(void) { return (int)(OPENSSL_VERSION_NUMBER >> 28); }

long ccryptoshim_bio_mem_contents(BIO *bio, const char **data) {
    char *pointer = NULL;
    long length = BIO_get_mem_data(bio, &pointer);
    *data = pointer;
    return length;
}

void ccryptoshim_free(void *pointer) { OPENSSL_free(pointer); }

STACK_OF(X509) *ccryptoshim_x509_stack_new(void) { return sk_X509_new_null(); }

int ccryptoshim_x509_stack_push(STACK_OF(X509) *stack, X509 *certificate) {
    if (!X509_up_ref(certificate)) return 0;
    if (sk_X509_push(stack, certificate) <= 0) { X509_free(certificate); return 0; }
    return 1;
}

void ccryptoshim_x509_stack_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }

int ccryptoshim_x509_stack_count(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }

X509 *ccryptoshim_x509_stack_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }

int ccryptoshim_asn1_time_to_unix(const ASN1_TIME *time, int64_t *seconds) {
    struct tm parts;
    if (time == NULL || ASN1_TIME_to_tm(time, &parts) != 1) return 0;
    *seconds = (int64_t)timegm(&parts);
    return 1;
}

int ccryptoshim_ssl_set_server_name(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }

int ccryptoshim_ssl_ctx_require_tls12(SSL_CTX *context) { return (int)SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION); }
