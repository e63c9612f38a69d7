// OpenSSL loaded on first use. mcpmuxd is not linked against libssl/libcrypto: mapping and
// relocating them costs ~1.7 MiB of RSS and a millisecond or two at every start, yet only https
// upstreams need them. Each OpenSSL function the program calls (Asio's SSL layer, Beast, the HTTP
// transport, the tests' TLS server) is defined here as a stub that looks the real one up in
// libssl (dlopen'ed the first time) and calls it.
//
// A new OpenSSL call elsewhere fails to link ("undefined reference to SSL_foo") until its stub is
// added below; the compiler checks each stub's signature against the OpenSSL headers. The stubs
// are hidden: libssl's own calls into libcrypto never come back through them.
#include "transports/openssl_loader.hpp"

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#ifndef MCPMUX_LIBSSL_SONAME
#error "MCPMUX_LIBSSL_SONAME (e.g. \"libssl.so.3\") must be defined by the build"
#endif

namespace mcpmux {
namespace {

struct library {
  void* handle = nullptr;
  std::string error;
};

const library& libssl() {
  // Thread-safe once (the tests' TLS server runs on its own thread); never unloaded.
  static const library lib = [] {
    library l;
    l.handle = ::dlopen(MCPMUX_LIBSSL_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!l.handle) {
      const char* why = ::dlerror();
      l.error = std::string("cannot load OpenSSL (") + MCPMUX_LIBSSL_SONAME +
                "): " + (why ? why : "unknown error");
    }
    return l;
  }();
  return lib;
}

// The address of an OpenSSL function (libssl's or, through its dependency, libcrypto's).
void* openssl_symbol(const char* name) {
  const auto& lib = libssl();
  void* p = lib.handle ? ::dlsym(lib.handle, name) : nullptr;
  if (!p) {
    // Only reachable when TLS is used without load_openssl() succeeding first.
    std::fprintf(stderr, "mcpmux: OpenSSL function %s unavailable: %s\n", name,
                 lib.handle ? "not found in " MCPMUX_LIBSSL_SONAME : lib.error.c_str());
    std::abort();
  }
  return p;
}

}  // namespace

result<> load_openssl() {
  const auto& lib = libssl();
  if (!lib.handle) return failure(lib.error);
  return {};
}

}  // namespace mcpmux

// Only the OpenSSL declarations are hidden (system headers above keep their visibility).
#pragma GCC visibility push(hidden)
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// ret name(params) { return real(args); }, `real` resolved once.
#define MCPMUX_OPENSSL_STUB(ret, name, params, args)                                           \
  ret name params {                                                                            \
    static const auto real = reinterpret_cast<ret(*) params>(::mcpmux::openssl_symbol(#name)); \
    return real args;                                                                          \
  }

extern "C" {

// libcrypto
MCPMUX_OPENSSL_STUB(long, BIO_ctrl, (BIO * b, int cmd, long larg, void* parg), (b, cmd, larg, parg))
MCPMUX_OPENSSL_STUB(size_t, BIO_ctrl_pending, (BIO * b), (b))
MCPMUX_OPENSSL_STUB(int, BIO_free, (BIO * a), (a))
MCPMUX_OPENSSL_STUB(int, BIO_new_bio_pair, (BIO * *b1, size_t w1, BIO** b2, size_t w2),
                    (b1, w1, b2, w2))
MCPMUX_OPENSSL_STUB(BIO*, BIO_new_file, (const char* filename, const char* mode), (filename, mode))
MCPMUX_OPENSSL_STUB(BIO*, BIO_new_mem_buf, (const void* buf, int len), (buf, len))
MCPMUX_OPENSSL_STUB(int, BIO_read, (BIO * b, void* data, int dlen), (b, data, dlen))
MCPMUX_OPENSSL_STUB(int, BIO_write, (BIO * b, const void* data, int dlen), (b, data, dlen))
MCPMUX_OPENSSL_STUB(void, CRYPTO_free, (void* ptr, const char* file, int line), (ptr, file, line))
MCPMUX_OPENSSL_STUB(void, ERR_clear_error, (void), ())
MCPMUX_OPENSSL_STUB(unsigned long, ERR_get_error, (void), ())
MCPMUX_OPENSSL_STUB(const char*, ERR_lib_error_string, (unsigned long e), (e))
MCPMUX_OPENSSL_STUB(unsigned long, ERR_peek_error, (void), ())
MCPMUX_OPENSSL_STUB(unsigned long, ERR_peek_last_error, (void), ())
MCPMUX_OPENSSL_STUB(const char*, ERR_reason_error_string, (unsigned long e), (e))
MCPMUX_OPENSSL_STUB(void, EVP_PKEY_free, (EVP_PKEY * pkey), (pkey))
MCPMUX_OPENSSL_STUB(int, EVP_PKEY_is_a, (const EVP_PKEY* pkey, const char* name), (pkey, name))
MCPMUX_OPENSSL_STUB(EVP_PKEY*, PEM_read_bio_Parameters, (BIO * bp, EVP_PKEY** x), (bp, x))
MCPMUX_OPENSSL_STUB(int, RAND_bytes, (unsigned char* buf, int num), (buf, num))
MCPMUX_OPENSSL_STUB(unsigned char*, SHA256, (const unsigned char* d, size_t n, unsigned char* md),
                    (d, n, md))
MCPMUX_OPENSSL_STUB(EVP_PKEY*, PEM_read_bio_PrivateKey,
                    (BIO * bp, EVP_PKEY** x, pem_password_cb* cb, void* u), (bp, x, cb, u))
MCPMUX_OPENSSL_STUB(X509*, PEM_read_bio_X509, (BIO * bp, X509** x, pem_password_cb* cb, void* u),
                    (bp, x, cb, u))
MCPMUX_OPENSSL_STUB(X509*, PEM_read_bio_X509_AUX,
                    (BIO * bp, X509** x, pem_password_cb* cb, void* u), (bp, x, cb, u))
MCPMUX_OPENSSL_STUB(X509*, X509_STORE_CTX_get_current_cert, (const X509_STORE_CTX* ctx), (ctx))
MCPMUX_OPENSSL_STUB(int, X509_STORE_CTX_get_error_depth, (const X509_STORE_CTX* ctx), (ctx))
MCPMUX_OPENSSL_STUB(void*, X509_STORE_CTX_get_ex_data, (const X509_STORE_CTX* ctx, int idx),
                    (ctx, idx))
MCPMUX_OPENSSL_STUB(int, X509_STORE_add_cert, (X509_STORE * ctx, X509* x), (ctx, x))
MCPMUX_OPENSSL_STUB(int, X509_check_host,
                    (X509 * x, const char* chk, size_t chklen, unsigned int flags, char** peer),
                    (x, chk, chklen, flags, peer))
MCPMUX_OPENSSL_STUB(int, X509_check_ip_asc, (X509 * x, const char* ipasc, unsigned int flags),
                    (x, ipasc, flags))
MCPMUX_OPENSSL_STUB(void, X509_free, (X509 * a), (a))
MCPMUX_OPENSSL_STUB(EVP_PKEY*, d2i_PrivateKey_bio, (BIO * bp, EVP_PKEY** a), (bp, a))

// libssl
MCPMUX_OPENSSL_STUB(uint64_t, SSL_CTX_clear_options, (SSL_CTX * ctx, uint64_t op), (ctx, op))
MCPMUX_OPENSSL_STUB(long, SSL_CTX_ctrl, (SSL_CTX * ctx, int cmd, long larg, void* parg),
                    (ctx, cmd, larg, parg))
MCPMUX_OPENSSL_STUB(void, SSL_CTX_free, (SSL_CTX * ctx), (ctx))
MCPMUX_OPENSSL_STUB(X509_STORE*, SSL_CTX_get_cert_store, (const SSL_CTX* ctx), (ctx))
MCPMUX_OPENSSL_STUB(pem_password_cb*, SSL_CTX_get_default_passwd_cb, (SSL_CTX * ctx), (ctx))
MCPMUX_OPENSSL_STUB(void*, SSL_CTX_get_default_passwd_cb_userdata, (SSL_CTX * ctx), (ctx))
MCPMUX_OPENSSL_STUB(void*, SSL_CTX_get_ex_data, (const SSL_CTX* ctx, int idx), (ctx, idx))
MCPMUX_OPENSSL_STUB(SSL_verify_cb, SSL_CTX_get_verify_callback, (const SSL_CTX* ctx), (ctx))
MCPMUX_OPENSSL_STUB(int, SSL_CTX_get_verify_mode, (const SSL_CTX* ctx), (ctx))
MCPMUX_OPENSSL_STUB(int, SSL_CTX_load_verify_locations,
                    (SSL_CTX * ctx, const char* ca_file, const char* ca_path),
                    (ctx, ca_file, ca_path))
MCPMUX_OPENSSL_STUB(SSL_CTX*, SSL_CTX_new, (const SSL_METHOD* meth), (meth))
MCPMUX_OPENSSL_STUB(int, SSL_CTX_set0_tmp_dh_pkey, (SSL_CTX * ctx, EVP_PKEY* dhpkey), (ctx, dhpkey))
MCPMUX_OPENSSL_STUB(void, SSL_CTX_set_default_passwd_cb, (SSL_CTX * ctx, pem_password_cb* cb),
                    (ctx, cb))
MCPMUX_OPENSSL_STUB(void, SSL_CTX_set_default_passwd_cb_userdata, (SSL_CTX * ctx, void* u),
                    (ctx, u))
MCPMUX_OPENSSL_STUB(int, SSL_CTX_set_default_verify_paths, (SSL_CTX * ctx), (ctx))
MCPMUX_OPENSSL_STUB(int, SSL_CTX_set_ex_data, (SSL_CTX * ctx, int idx, void* data),
                    (ctx, idx, data))
MCPMUX_OPENSSL_STUB(uint64_t, SSL_CTX_set_options, (SSL_CTX * ctx, uint64_t op), (ctx, op))
MCPMUX_OPENSSL_STUB(void, SSL_CTX_set_verify, (SSL_CTX * ctx, int mode, SSL_verify_cb cb),
                    (ctx, mode, cb))
MCPMUX_OPENSSL_STUB(void, SSL_CTX_set_verify_depth, (SSL_CTX * ctx, int depth), (ctx, depth))
MCPMUX_OPENSSL_STUB(int, SSL_CTX_use_PrivateKey, (SSL_CTX * ctx, EVP_PKEY* pkey), (ctx, pkey))
MCPMUX_OPENSSL_STUB(int, SSL_CTX_use_PrivateKey_file, (SSL_CTX * ctx, const char* file, int type),
                    (ctx, file, type))
MCPMUX_OPENSSL_STUB(int, SSL_CTX_use_certificate, (SSL_CTX * ctx, X509* x), (ctx, x))
MCPMUX_OPENSSL_STUB(int, SSL_CTX_use_certificate_ASN1,
                    (SSL_CTX * ctx, int len, const unsigned char* d), (ctx, len, d))
MCPMUX_OPENSSL_STUB(int, SSL_CTX_use_certificate_chain_file, (SSL_CTX * ctx, const char* file),
                    (ctx, file))
MCPMUX_OPENSSL_STUB(int, SSL_CTX_use_certificate_file, (SSL_CTX * ctx, const char* file, int type),
                    (ctx, file, type))
MCPMUX_OPENSSL_STUB(int, SSL_accept, (SSL * ssl), (ssl))
MCPMUX_OPENSSL_STUB(int, SSL_connect, (SSL * ssl), (ssl))
MCPMUX_OPENSSL_STUB(long, SSL_ctrl, (SSL * ssl, int cmd, long larg, void* parg),
                    (ssl, cmd, larg, parg))
MCPMUX_OPENSSL_STUB(void, SSL_free, (SSL * ssl), (ssl))
MCPMUX_OPENSSL_STUB(SSL_CTX*, SSL_get_SSL_CTX, (const SSL* ssl), (ssl))
MCPMUX_OPENSSL_STUB(int, SSL_get_error, (const SSL* s, int ret_code), (s, ret_code))
MCPMUX_OPENSSL_STUB(void*, SSL_get_ex_data, (const SSL* ssl, int idx), (ssl, idx))
MCPMUX_OPENSSL_STUB(int, SSL_get_ex_data_X509_STORE_CTX_idx, (void), ())
MCPMUX_OPENSSL_STUB(int, SSL_get_shutdown, (const SSL* ssl), (ssl))
MCPMUX_OPENSSL_STUB(SSL_verify_cb, SSL_get_verify_callback, (const SSL* s), (s))
MCPMUX_OPENSSL_STUB(int, SSL_get_verify_mode, (const SSL* s), (s))
MCPMUX_OPENSSL_STUB(SSL*, SSL_new, (SSL_CTX * ctx), (ctx))
MCPMUX_OPENSSL_STUB(int, SSL_read, (SSL * ssl, void* buf, int num), (ssl, buf, num))
MCPMUX_OPENSSL_STUB(void, SSL_set_bio, (SSL * s, BIO* rbio, BIO* wbio), (s, rbio, wbio))
MCPMUX_OPENSSL_STUB(int, SSL_set_ex_data, (SSL * ssl, int idx, void* data), (ssl, idx, data))
MCPMUX_OPENSSL_STUB(void, SSL_set_verify, (SSL * s, int mode, SSL_verify_cb cb), (s, mode, cb))
MCPMUX_OPENSSL_STUB(void, SSL_set_verify_depth, (SSL * s, int depth), (s, depth))
MCPMUX_OPENSSL_STUB(int, SSL_shutdown, (SSL * s), (s))
MCPMUX_OPENSSL_STUB(int, SSL_write, (SSL * ssl, const void* buf, int num), (ssl, buf, num))
MCPMUX_OPENSSL_STUB(const SSL_METHOD*, TLS_client_method, (void), ())
MCPMUX_OPENSSL_STUB(const SSL_METHOD*, TLS_method, (void), ())
MCPMUX_OPENSSL_STUB(const SSL_METHOD*, TLS_server_method, (void), ())

}  // extern "C"

#pragma GCC visibility pop
