#ifndef CCRYPTOSHIM_H
#define CCRYPTOSHIM_H
#include <stddef.h>
#include <stdint.h>
#include <openssl/x509.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

/* Only what Swift cannot import from OpenSSL's headers: function-like macros
 * (BIO_get_mem_data, OPENSSL_free, sk_X509_*) and a timegm-based ASN1_TIME reader. */

int ccryptoshim_version(void);

/* Bytes held by a memory BIO (BIO_get_mem_data); *data stays owned by the BIO. */
long ccryptoshim_bio_mem_contents(BIO *bio, const char **data);

/* OPENSSL_free for buffers OpenSSL allocated (X509_NAME_oneline, i2d with NULL out). */
void ccryptoshim_free(void *pointer);

/* STACK_OF(X509) for the untrusted chain: push takes its own reference; free drops them. */
STACK_OF(X509) *ccryptoshim_x509_stack_new(void);
int ccryptoshim_x509_stack_push(STACK_OF(X509) *stack, X509 *certificate);
void ccryptoshim_x509_stack_free(STACK_OF(X509) *stack);
int ccryptoshim_x509_stack_count(const STACK_OF(X509) *stack);
/* Borrowed (get0) element; NULL when out of range. */
X509 *ccryptoshim_x509_stack_value(const STACK_OF(X509) *stack, int index);

/* ASN1_TIME (UTCTime or GeneralizedTime) as seconds since the epoch; 1 on success. */
int ccryptoshim_asn1_time_to_unix(const ASN1_TIME *time, int64_t *seconds);

/* TLS client macros: SNI (SSL_set_tlsext_host_name) and TLS 1.2 as the floor
 * (SSL_CTX_set_min_proto_version). 1 on success. */
int ccryptoshim_ssl_set_server_name(SSL *ssl, const char *name);
int ccryptoshim_ssl_ctx_require_tls12(SSL_CTX *context);

#endif
