package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// CN and TN store identities, re-stated from the sources that define them.

// cnStoreUUID is the UUID the operator derives from a CN pod and under which a CN
// registers in HAKeeper: matrixone-operator api/core/v1alpha1/common_helpers.go:224-235
// (GetCNPodUUID, @2301e3b), which mirrors the CN start script's
// `echo ${ADDR} | sha256sum | od -x | head -1 | awk ...` (pkg/controllers/cnset/resource.go:44-46).
func cnStoreUUID(pod, subdomain, namespace string) string {
	return odxUUID(fmt.Sprintf("%s.%s.%s.svc", pod, subdomain, namespace))
}

// tnStoreUUID is the UUID of a TN pod as the DNSet start script computes it
// (matrixone-operator pkg/controllers/dnset/resource.go:48-56): the od -x scheme over the
// pod's DNS name when HOSTNAME_UUID is set (DNS-based identity), else a UUID made from
// the pod's ordinal.
func tnStoreUUID(pod, addr string, hostnameUUID bool) string {
	if hostnameUUID {
		return odxUUID(addr)
	}
	ordinal := 0
	if i := strings.LastIndex(pod, "-"); i >= 0 {
		if n, err := strconv.Atoi(pod[i+1:]); err == nil {
			ordinal = n
		}
	}
	return fmt.Sprintf("00000000-0000-0000-0000-1%011x", ordinal)
}

// odxUUID is `echo <line> | sha256sum | od -x | head -1` regrouped as 8-4-4-4-12: the
// first 16 characters of the hex digest, read as little-endian 16-bit words. Every word
// is two ASCII hex digits (>= 0x3030), so each prints as exactly four hex digits.
func odxUUID(line string) string {
	sum := sha256.Sum256([]byte(line + "\n"))
	digest := hex.EncodeToString(sum[:])
	words := make([]string, 8)
	for i := range words {
		lo, hi := digest[2*i], digest[2*i+1]
		words[i] = fmt.Sprintf("%02x%02x", hi, lo)
	}
	return fmt.Sprintf("%s%s-%s-%s-%s-%s%s%s",
		words[0], words[1], words[2], words[3], words[4], words[5], words[6], words[7])
}
