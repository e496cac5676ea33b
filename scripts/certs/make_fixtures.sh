#!/usr/bin/env bash
# Writes Fixtures/certs/: real certificates from Debian's ca-certificates (PEM -> DER), malformed variants
# of one of them, and MANIFEST.tsv with what each must give (SPEC.md Part 3 §K3.1). The expected fields are
# taken with OpenSSL, not with kcar's reader: issuer, subject and serial are cut out of the DER at the
# offsets `openssl asn1parse` reports, and checked against `openssl x509 -serial`; pkhh hashes the key
# bits of `openssl x509 -pubkey`; skid is `openssl x509 -ext subjectKeyIdentifier`; labl the subject's
# last CN. Needs bash, openssl, python3 (for the malformed cases) and the ca-certificates package.
#
#   scripts/certs/make_fixtures.sh          (from the repository root; `make cert-fixtures`)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRC=${CA_CERTIFICATES:-/usr/share/ca-certificates/mozilla}
OUT=$ROOT/Fixtures/certs
# Chosen for variety: RSA 2048 and 4096, EC P-256 and P-384, no subject key identifier (Hongkong Post 1,
# TWCA Global), a TeletexString (Entrust.net), non-ASCII UTF8String names (NetLock, TUBITAK), a serial
# whose first byte is 0x00 (its high bit would be the sign), and several of one operator.
CERTS=(Amazon_Root_CA_1 Amazon_Root_CA_3 Amazon_Root_CA_4 ISRG_Root_X1 ISRG_Root_X2 Hongkong_Post_Root_CA_1
	TWCA_Global_Root_CA Entrust.net_Premium_2048_Secure_Server_CA "NetLock_Arany_=Class_Gold=_Főtanúsítvány"
	TUBITAK_Kamu_SM_SSL_Kok_Sertifikasi_-_Surum_1 GlobalSign_Root_CA GlobalSign_Root_CA_-_R3 GlobalSign_Root_E46)

rm -rf "$OUT"
mkdir -p "$OUT/malformed"
hexof() { od -An -v -tx1 | tr -d ' \n'; }
# The DER element at offset $2 (header $3 bytes, content $4 bytes) of file $1, as hex.
cut_hex() { dd if="$1" bs=1 skip="$2" count=$(($3 + $4)) status=none | hexof; }

manifest=$OUT/MANIFEST.tsv
printf 'file\texpect\tctyp\tslnr\tissr\tsubj\tskid\tpkhh\tlabl\n' > "$manifest"
for name in "${CERTS[@]}"; do
	file=$(echo "$name" | tr -c 'A-Za-z0-9_.\n-' '_').der
	openssl x509 -in "$SRC/$name.crt" -outform DER -out "$OUT/$file"
	der=$OUT/$file
	# Elements at depth 2 are the TBSCertificate's fields, in order.
	mapfile -t fields < <(openssl asn1parse -inform DER -in "$der" | awk '/:d=2 /{ split($0, a, ":"); off=a[1]+0;
		match($0, /hl= *[0-9]+/); hl=substr($0, RSTART+3, RLENGTH-3)+0; match($0, / l= *[0-9]+/);
		l=substr($0, RSTART+3, RLENGTH-3)+0; print off, hl, l }')
	read -r o h l <<< "${fields[0]}"
	i=0; version=1
	if [ "$(dd if="$der" bs=1 skip="$o" count=1 status=none | hexof)" = a0 ]; then
		version=$(( $(openssl x509 -inform DER -in "$der" -noout -text | awk '/Version:/{print $2; exit}') ))
		i=1
	fi
	read -r o h l <<< "${fields[$i]}"; slnr=$(dd if="$der" bs=1 skip=$((o + h)) count="$l" status=none | hexof)
	read -r o h l <<< "${fields[$((i + 2))]}"; issr=$(cut_hex "$der" "$o" "$h" "$l")
	read -r o h l <<< "${fields[$((i + 4))]}"; subj=$(cut_hex "$der" "$o" "$h" "$l")
	# Cross-check the serial with OpenSSL's own reading of it (which drops a leading zero byte).
	serial=$(openssl x509 -inform DER -in "$der" -noout -serial | cut -d= -f2 | tr 'A-F' 'a-f')
	[ "${slnr#00}" = "$serial" ] || [ "$slnr" = "$serial" ] || { echo "serial mismatch in $name" >&2; exit 1; }
	skid=$(openssl x509 -inform DER -in "$der" -noout -ext subjectKeyIdentifier 2>/dev/null | sed -n 2p | tr -d ' :\n' | tr 'A-F' 'a-f')
	skid=${skid:--}
	spki=$(mktemp)
	openssl x509 -inform DER -in "$der" -noout -pubkey | openssl pkey -pubin -outform DER -out "$spki"
	read -r o h l < <(openssl asn1parse -inform DER -in "$spki" | awk '/BIT STRING/{ split($0, a, ":"); off=a[1]+0;
		match($0, /hl= *[0-9]+/); hl=substr($0, RSTART+3, RLENGTH-3)+0; match($0, / l= *[0-9]+/);
		l=substr($0, RSTART+3, RLENGTH-3)+0; print off, hl, l; exit }')
	pkhh=$(dd if="$spki" bs=1 skip=$((o + h + 1)) count=$((l - 1)) status=none | openssl sha1 -r | cut -d' ' -f1)
	rm -f "$spki"
	labl=$(openssl x509 -inform DER -in "$der" -noout -subject -nameopt utf8,sep_multiline,sname | sed -n 's/^ *CN=//p' | tail -1)
	printf '%s\tok\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$file" "$version" "$slnr" "$issr" "$subj" "$skid" "$pkhh" "${labl:--}" >> "$manifest"
done

# Malformed variants of Amazon_Root_CA_1, each breaking one DER rule (python3: a small DER tree, edited and
# re-encoded with minimal lengths, then, for the length rules, bytes changed after encoding).
python3 - "$OUT/Amazon_Root_CA_1.der" "$OUT/malformed" >> "$manifest" <<'PY'
import sys
src, out = sys.argv[1], sys.argv[2]
der = open(src, "rb").read()

def parse(b, i=0):
    """One element at i: (tag, content bytes or list of children, end)."""
    tag = b[i]; n = b[i + 1]; i += 2
    if n & 0x80:
        k = n & 0x7F; n = int.from_bytes(b[i:i + k], "big"); i += k
    body = b[i:i + n]
    if tag & 0x20:
        kids, j = [], 0
        while j < len(body):
            kid, j = parse(body, j)
            kids.append(kid)
        return (tag, kids), i + n
    return (tag, body), i + n

def length(n):
    if n < 0x80: return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(b)]) + b

def enc(e):
    tag, body = e
    if isinstance(body, list): body = b"".join(enc(k) for k in body)
    return bytes([tag]) + length(len(body)) + body

cert, _ = parse(der)
assert enc(cert) == der
tbs = cert[1][0]
def with_tbs(fields):
    return (0x30, [(0x30, fields)] + cert[1][1:])
f = tbs[1]
ext_list = f[-1][1][0]
skid_ext = next(x for x in ext_list[1] if x[1][0][1] == bytes([0x55, 0x1D, 0x0E]))

cases = {
    "truncated.der": (der[:-1], "truncated"),
    "trailing-byte.der": (der + b"\x00", "trailingBytes"),
    "indefinite-length.der": (der[:1] + b"\x80" + der[4:] + b"\x00\x00", "indefiniteLength"),
    "non-minimal-length.der": (der[:1] + b"\x83\x00" + der[2:], "nonMinimalLength"),
    "length-too-long.der": (der[:1] + b"\x85\x00\x00\x00" + der[2:], "lengthTooLong"),
    "high-tag-number.der": (b"\x3f" + der[1:], "highTagNumber"),
    "not-a-sequence.der": (b"\x31" + der[1:], "unexpectedTag"),
    "empty.der": (b"", "truncated"),
    # The version [0] { INTEGER 2 } with its length in the long form: 81 03 for 03.
    "long-form-short-length.der": None,
    "serial-leading-zero.der": (enc(with_tbs([f[0], (0x02, b"\x00" + f[1][1])] + f[2:])), "invalidInteger"),
    "version-1-encoded.der": (enc(with_tbs([(0xA0, [(0x02, b"\x00")])] + f[1:])), "invalidVersion"),
    "version-4.der": (enc(with_tbs([(0xA0, [(0x02, b"\x03")])] + f[1:])), "invalidVersion"),
    "duplicate-extension.der": (enc(with_tbs(f[:-1] + [(0xA3, [(0x30, ext_list[1] + [skid_ext])])])), "duplicateExtension"),
    "critical-false.der": (enc(with_tbs(f[:-1] + [(0xA3, [(0x30, [(0x30, [skid_ext[1][0], (0x01, b"\x00")] + skid_ext[1][1:])])])])), "invalidBoolean"),
    "bitstring-unused-bits.der": (enc((0x30, cert[1][:2] + [(0x03, b"\x08" + cert[1][2][1][1:])])), "invalidBitString"),
    "oid-padded.der": (enc(with_tbs(f[:2] + [(0x30, [(0x06, b"\x80" + f[2][1][0][1])] + f[2][1][1:])] + f[3:])), "invalidObjectIdentifier"),
}
body = enc(tbs)
i = body.index(b"\xa0\x03\x02\x01\x02")
tbs_long = enc((0x30, [])) # placeholder
inner = body[4:i] + b"\xa0\x81\x03\x02\x01\x02" + body[i + 5:]  # tbs content with the long form
tbs_bytes = b"\x30" + length(len(inner)) + inner
rest = b"".join(enc(k) for k in cert[1][1:])
cases["long-form-short-length.der"] = (b"\x30" + length(len(tbs_bytes) + len(rest)) + tbs_bytes + rest, "nonMinimalLength")
assert body[:2] == b"\x30\x82"
for name in sorted(cases):
    data, expect = cases[name]
    open(f"{out}/{name}", "wb").write(data)
    print(f"malformed/{name}\t{expect}\t-\t-\t-\t-\t-\t-\t-")
PY

# Keys (keys/KEYS.tsv): public keys cut from two certificates (so their klbl must equal the certificate's
# pkhh) and two private keys made here (random: a new run writes new keys and their rows). klbl is SHA-1 of
# the BIT STRING content of the public key as `openssl pkey -pubout` writes it.
mkdir -p "$OUT/keys"
keys=$OUT/keys/KEYS.tsv
printf 'file\tkcls\ttype\tbsiz\tklbl\n' > "$keys"
klbl_of() { # $1: a key file that `openssl pkey` reads ($2: -pubin for a public key)
	local spki
	spki=$(mktemp)
	openssl pkey -inform DER -in "$1" ${2:-} -pubout -outform DER -out "$spki"
	read -r o h l < <(openssl asn1parse -inform DER -in "$spki" | awk '/BIT STRING/{ split($0, a, ":"); off=a[1]+0;
		match($0, /hl= *[0-9]+/); hl=substr($0, RSTART+3, RLENGTH-3)+0; match($0, / l= *[0-9]+/);
		l=substr($0, RSTART+3, RLENGTH-3)+0; print off, hl, l; exit }')
	dd if="$spki" bs=1 skip=$((o + h + 1)) count=$((l - 1)) status=none | openssl sha1 -r | cut -d' ' -f1
	rm -f "$spki"
}
openssl x509 -inform DER -in "$OUT/Amazon_Root_CA_1.der" -noout -pubkey | openssl pkey -pubin -outform DER -out "$OUT/keys/rsa2048-spki.der"
openssl rsa -pubin -inform DER -in "$OUT/keys/rsa2048-spki.der" -outform DER -RSAPublicKey_out -out "$OUT/keys/rsa2048-pkcs1-public.der" 2>/dev/null
openssl x509 -inform DER -in "$OUT/Amazon_Root_CA_3.der" -noout -pubkey | openssl pkey -pubin -outform DER -out "$OUT/keys/p256-spki.der"
openssl x509 -inform DER -in "$OUT/ISRG_Root_X2.der" -noout -pubkey | openssl pkey -pubin -outform DER -out "$OUT/keys/p384-spki.der"
openssl genrsa -traditional 2048 2>/dev/null | openssl rsa -traditional -outform DER -out "$OUT/keys/rsa2048-pkcs1-private.der" 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -outform DER -out "$OUT/keys/p256-sec1-private.der"
printf 'rsa2048-spki.der\t0\t42\t2048\t%s\n' "$(klbl_of "$OUT/keys/rsa2048-spki.der" -pubin)" >> "$keys"
printf 'rsa2048-pkcs1-public.der\t0\t42\t2048\t%s\n' "$(klbl_of "$OUT/keys/rsa2048-spki.der" -pubin)" >> "$keys"
printf 'p256-spki.der\t0\t73\t256\t%s\n' "$(klbl_of "$OUT/keys/p256-spki.der" -pubin)" >> "$keys"
printf 'p384-spki.der\t0\t73\t384\t%s\n' "$(klbl_of "$OUT/keys/p384-spki.der" -pubin)" >> "$keys"
printf 'rsa2048-pkcs1-private.der\t1\t42\t2048\t%s\n' "$(klbl_of "$OUT/keys/rsa2048-pkcs1-private.der")" >> "$keys"
printf 'p256-sec1-private.der\t1\t73\t256\t%s\n' "$(klbl_of "$OUT/keys/p256-sec1-private.der")" >> "$keys"
echo "wrote $(($(wc -l < "$manifest") - 1)) certificate cases and $(($(wc -l < "$keys") - 1)) keys"
