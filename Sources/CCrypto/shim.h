// OpenSSL's libcrypto, for what libsodium lacks and the Secret Service's encrypted session needs (SPEC.md
// K10): the 1024-bit MODP group's arithmetic, HKDF-SHA256 and AES-128-CBC.
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
