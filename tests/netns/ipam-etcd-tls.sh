#!/bin/bash
# rdma-netns-ipam against an etcd that wants TLS client certificates and has
# auth enabled: certificates made here with openssl, users and a role made
# with etcdctl. The right credentials work; each wrong one fails with a
# message that says which; the password and the token never reach the log
# (debug level), stdout, stderr or the records.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/ipam-lib.sh"

pki=$IPAM_TMP/pki
mkdir -p "$pki"
# cert NAME SUBJECT EKU [CA]: an EC key and a certificate signed by CA (self-signed without)
cert() {
	local name=$1 subject=$2 eku=$3 ca=${4:-}
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$pki/$name.key" -out "$pki/$name.csr" -subj "$subject" 2>/dev/null || return 1
	if [ -z "$ca" ]; then
		openssl x509 -req -in "$pki/$name.csr" -signkey "$pki/$name.key" -out "$pki/$name.pem" \
			-days 2 -extfile <(printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=keyCertSign,cRLSign\n') 2>/dev/null
	else
		openssl x509 -req -in "$pki/$name.csr" -CA "$pki/$ca.pem" -CAkey "$pki/$ca.key" \
			-CAcreateserial -out "$pki/$name.pem" -days 2 \
			-extfile <(printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=%s\n' "$eku") 2>/dev/null
	fi
}
# etcd 3.4's JSON gateway refuses client certificates with a CN once auth is
# on (the CN would be taken for a user it cannot pass on): the plugin's has none.
cert ca /CN=rn-test-ca - && cert other-ca /CN=rn-other-ca - &&
	cert server /CN=127.0.0.1 serverAuth,clientAuth ca &&
	cert client /O=rdmans-cni clientAuth ca && cert with-cn /CN=cni clientAuth ca &&
	cert root /CN=root clientAuth ca &&
	cert stranger /O=stranger clientAuth other-ca || vm_fail "openssl could not make the test certificates"

ETCD_SCHEME=https
ETCD_CURL_OPTS="--cacert $pki/ca.pem --cert $pki/root.pem --key $pki/root.key"
etcd_cluster 1 --cert-file "$pki/server.pem" --key-file "$pki/server.key" \
	--trusted-ca-file "$pki/ca.pem" --client-cert-auth
ETCDCTL_OPTS="--cacert=$pki/ca.pem --cert=$pki/root.pem --key=$pki/root.key"

PASSWORD="pw-$RANDOM$RANDOM-Sekr1t"
ROOTPW="root-$RANDOM$RANDOM"
etcdctl_ 0 user add "root:$ROOTPW" >/dev/null &&
	etcdctl_ 0 user grant-role root root >/dev/null &&
	etcdctl_ 0 user add "cni:$PASSWORD" >/dev/null &&
	etcdctl_ 0 role add ipam >/dev/null &&
	etcdctl_ 0 role grant-permission ipam --prefix=true readwrite /tls/ >/dev/null &&
	etcdctl_ 0 user grant-role cni ipam >/dev/null &&
	etcdctl_ 0 auth enable >/dev/null || vm_fail "could not set up etcd auth"
# from here etcdctl logs in as root with the password
ETCDCTL_OPTS="$ETCDCTL_OPTS --user=root:$ROOTPW"
printf '%s\n' "$PASSWORD" >"$pki/cni.password"
chmod 600 "$pki/cni.password"

LOG=$IPAM_TMP/ipam.log
# conf ETCD-OBJECT: a network config whose ipam.etcd is ETCD-OBJECT
conf() {
	printf '%s' '{"cniVersion":"1.1.0","name":"rdma-tls","ipam":{"type":"rdma-netns-ipam",
 "range":"10.62.0.0/24","store":"etcd","node_name":"node-1","log_file":"'"$LOG"'","log_level":"debug",
 "etcd":'"$1"'}}'
}
tls='"ca_file":"'$pki/ca.pem'","cert_file":"'$pki/client.pem'","key_file":"'$pki/client.key'","key_prefix":"/tls"'
EP=${ETCD_CLIENT[0]}
outs=$IPAM_TMP/outputs
: >"$outs"
# expect NAME RC CMD CID [IFNAME POD]: one TAP result for ipam_run's exit status,
# run in this shell so $IPAM_OUT stays for the next checks; output kept for the secrets check.
expect() {
	local name=$1 want=$2 rc=0
	shift 2
	ipam_run "$@" || rc=$?
	printf '%s\n' "$IPAM_OUT" >>"$outs"
	if [ "$rc" = "$want" ]; then
		vm_ok "$name"
	else
		vm_not_ok "$name"
		vm_diag "exit $rc, expected $want: $IPAM_OUT"
	fi
}

CONF=$(conf '{"endpoints":["'"$EP"'"],'"$tls"',"username":"cni","password":"'"$PASSWORD"'"}')
expect "ADD over TLS with a client certificate and a password" 0 ADD tls1 net1 ns/pod-1
expect "CHECK over TLS" 0 CHECK tls1 net1 ns/pod-1
expect "STATUS over TLS" 0 STATUS -
vm_check "the record is in etcd under the prefix" vm_expect_eq 1 \
	"$(etcdctl_ 0 get --prefix /tls/_default/addr/ --keys-only | grep -c .)" "records"

CONF=$(conf '{"endpoints":["'"$EP"'"],'"$tls"',"username":"cni","password_file":"'"$pki/cni.password"'"}')
expect "the password can come from a file" 0 ADD tls2 net1 ns/pod-2

# the etcd_* keys of whereabouts, with etcd_host without a scheme (https: TLS files given)
CONF='{"cniVersion":"1.1.0","name":"rdma-tls","ipam":{"type":"rdma-netns-ipam","range":"10.62.0.0/24",
 "etcd_host":"'"${EP#https://}"'","etcd_username":"cni","etcd_password":"'"$PASSWORD"'",
 "etcd_ca_cert_file":"'"$pki/ca.pem"'","etcd_cert_file":"'"$pki/client.pem"'","etcd_key_file":"'"$pki/client.key"'",
 "etcd":{"key_prefix":"/tls"},"log_file":"'"$LOG"'","log_level":"debug"}}'
expect "whereabouts' etcd_* keys work" 0 ADD tls3 net1 ns/pod-3

CONF=$(conf '{"endpoints":["'"$EP"'"],'"$tls"'}')
expect "no etcd user while auth is on fails" 1 ADD bad0 net1 ns/bad-0
vm_check "... with code 101, saying to set the user" vm_expect_eq \
	"101|etcd at $EP has auth enabled: give a user name and password with ipam.etcd.username and ipam.etcd.password_file (or password)" \
	"$(printf '%s' "$IPAM_OUT" | jq -r '"\(.code)|\(.details)"')"

CONF=$(conf '{"endpoints":["'"$EP"'"],"ca_file":"'"$pki/ca.pem"'","cert_file":"'"$pki/with-cn.pem"'","key_file":"'"$pki/with-cn.key"'","key_prefix":"/tls","username":"cni","password":"'"$PASSWORD"'"}')
expect "a client certificate with a CN fails (etcd's gateway refuses it under auth)" 1 ADD bad6 net1 ns/bad-6
vm_check "... saying what to change" vm_expect_contains "$(printf '%s' "$IPAM_OUT" | jq -r .details)" \
	"use a client certificate without CN"

CONF=$(conf '{"endpoints":["'"$EP"'"],'"$tls"',"username":"cni","password":"wrong-'"$PASSWORD"'"}')
expect "a wrong password fails" 1 ADD bad1 net1 ns/bad-1
vm_check "... with code 101 and etcd's reason" vm_expect_eq \
	"101|etcd login as 'cni': etcd at $EP refused: etcdserver: authentication failed, invalid user ID or password (check the etcd user, password and role)" \
	"$(printf '%s' "$IPAM_OUT" | jq -r '"\(.code)|\(.details)"')"

CONF=$(conf '{"endpoints":["'"$EP"'"],"ca_file":"'"$pki/other-ca.pem"'","cert_file":"'"$pki/client.pem"'","key_file":"'"$pki/client.key"'","key_prefix":"/tls","username":"cni","password":"'"$PASSWORD"'"}')
expect "a CA that did not sign the server fails" 1 ADD bad2 net1 ns/bad-2
vm_check "... saying it is TLS" vm_expect_contains "$(printf '%s' "$IPAM_OUT" | jq -r .details)" "over TLS"

CONF=$(conf '{"endpoints":["'"$EP"'"],"ca_file":"'"$pki/ca.pem"'","key_prefix":"/tls","username":"cni","password":"'"$PASSWORD"'"}')
# Under TLS 1.3 the server refuses a missing client certificate after the
# handshake: the client sees an alert, a reset or a socket already gone,
# depending on timing. Each must say TLS and the client certificate: tried
# 5 times so more than one of those outcomes is seen, whichever comes.
for i in 1 2 3 4 5; do
	expect "no client certificate fails (the server wants one), try $i" 1 ADD bad3 net1 ns/bad-3
	vm_check "... saying it is TLS and the client certificate, try $i" vm_expect_contains \
		"$(printf '%s' "$IPAM_OUT" | jq -r .details)" "over TLS: https://127.0.0.1"
	vm_check "... and what to set, try $i" vm_expect_contains \
		"$(printf '%s' "$IPAM_OUT" | jq -r .details)" "set cert_file and key_file"
done

CONF=$(conf '{"endpoints":["'"$EP"'"],"ca_file":"'"$pki/ca.pem"'","cert_file":"'"$pki/stranger.pem"'","key_file":"'"$pki/stranger.key"'","key_prefix":"/tls","username":"cni","password":"'"$PASSWORD"'"}')
expect "a client certificate from another CA fails" 1 ADD bad4 net1 ns/bad-4
vm_check "... saying it is TLS and the client certificate" vm_expect_contains \
	"$(printf '%s' "$IPAM_OUT" | jq -r .details)" "it may refuse our client certificate"

# a password in an endpoint URL is refused, pointing to username/password_file, and never shown
for ep in "https://cni:$PASSWORD@${EP#https://}" "cni:$PASSWORD@${EP#https://}"; do
	CONF=$(conf '{"endpoints":["'"$ep"'"],'"$tls"'}')
	expect "an endpoint with user:password is refused ($ep)" 1 ADD bad7 net1 ns/bad-7
	vm_check "... with code 7" vm_expect_eq 7 "$(printf '%s' "$IPAM_OUT" | jq -r .code)"
	vm_check "... redacted" vm_expect_contains "$IPAM_OUT" \
		"etcd endpoint '${ep%%cni:*}***@${EP#https://}' carries a user name or password"
done
vm_check "... the message names ipam.etcd.password_file" vm_expect_contains "$IPAM_OUT" "ipam.etcd.password_file"
CONF='{"cniVersion":"1.1.0","name":"rdma-tls","ipam":{"type":"rdma-netns-ipam","range":"10.62.0.0/24",
 "etcd_host":"https://cni:'"$PASSWORD"'@'"${EP#https://}"'","etcd_ca_cert_file":"'"$pki/ca.pem"'",
 "log_file":"'"$LOG"'","log_level":"debug"}}'
expect "whereabouts' etcd_host with user:password is refused too" 1 ADD bad8 net1 ns/bad-8
ls_err=$("$RDMANS" ipam ls --etcd "https://cni:$PASSWORD@${EP#https://}" --etcd-ca "$pki/ca.pem" 2>&1)
printf '%s\n' "$ls_err" >>"$outs"
vm_check "rdmans ipam ls --etcd with user:password is refused, redacted" vm_expect_contains "$ls_err" \
	"etcd endpoint 'https://***@"
vm_check "... naming the flags to use, not the config keys" vm_expect_contains "$ls_err" \
	"give them with --etcd-user and --etcd-password-file, and the endpoint without them"
ls_err=$("$RDMANS" ipam ls --etcd "$EP" --etcd-ca "$pki/ca.pem" --etcd-cert "$pki/client.pem" \
	--etcd-key "$pki/client.key" --etcd-prefix /tls 2>&1)
vm_check "rdmans ipam ls --etcd with no user while auth is on names the flags" \
	vm_expect_contains "$ls_err" "has auth enabled: give a user name and password with --etcd-user and --etcd-password-file"

CONF=$(conf '{"endpoints":["'"$EP"'"],'"${tls/\/tls/\/elsewhere}"',"username":"cni","password":"'"$PASSWORD"'"}')
expect "a prefix outside the user's role fails" 1 ADD bad5 net1 ns/bad-5
vm_check "... with code 101, permission denied" vm_expect_eq "101" "$(printf '%s' "$IPAM_OUT" | jq -r .code)"
expect "STATUS fails when the role does not reach the prefix" 1 STATUS -
vm_check "STATUS reports the refused role with code 50" vm_expect_eq 50 "$(printf '%s' "$IPAM_OUT" | jq -r .code)"

CONF=$(conf '{"endpoints":["'"$EP"'"],'"$tls"',"username":"cni","password":"'"$PASSWORD"'"}')
expect "DEL over TLS" 0 DEL tls1 net1 ns/pod-1
vm_check "nothing the failed ADDs tried is stored" vm_expect_eq 2 \
	"$(etcdctl_ 0 get --prefix /tls/ --keys-only | grep -c /addr/)" "address keys"
vm_check "rdmans ipam ls works with the same credentials" vm_expect_eq 2 \
	"$("$RDMANS" -j ipam ls --etcd "$EP" --etcd-ca "$pki/ca.pem" --etcd-cert "$pki/client.pem" \
		--etcd-key "$pki/client.key" --etcd-user cni --etcd-password-file "$pki/cni.password" \
		--etcd-prefix /tls | jq length)"
ls_err=$("$RDMANS" ipam ls --etcd "$EP" --etcd-ca "$pki/ca.pem" --etcd-cert "$pki/client.pem" \
	--etcd-key "$pki/client.key" --etcd-user cni --etcd-password-file "$pki/cni.password" \
	--etcd-prefix /elsewhere 2>&1 >/dev/null)
printf '%s\n' "$ls_err" >>"$outs"
vm_check "rdmans ipam ls says when the role does not reach the prefix" vm_expect_contains "$ls_err" "permission denied"

# secrets: the debug log, everything printed, the stored records
token=$(curl -s --noproxy '*' --cacert "$pki/ca.pem" --cert "$pki/client.pem" --key "$pki/client.key" \
	"$EP/v3/auth/authenticate" -d '{"name":"cni","password":"'"$PASSWORD"'"}' | jq -r .token)
vm_check "the debug log was written" bash -c "[ -s '$LOG' ] && grep -q 'store etcd' '$LOG'"
everything=$(cat "$LOG" "$outs" "$IPAM_TMP/stderr"; etcdctl_ 0 get --prefix /tls/)
vm_check "the password never reaches logs, output or records" vm_expect_eq 0 \
	"$(grep -c -- "$PASSWORD" <<<"$everything")" "lines with the password"
vm_check "no etcd token (like the ${#token}-character one etcd hands out) reaches them either" vm_expect_eq 0 \
	"$(grep -cE '[A-Za-z]{16}\.[0-9]+|Authorization' <<<"$everything")" "lines with a token"
vm_check "no private key reaches them" vm_expect_eq 0 "$(grep -c 'PRIVATE KEY' <<<"$everything")"

vm_done
