// Package ports picks the TCP ports of the processes a test or the local cluster starts.
package ports

import (
	"math/rand/v2"
	"net"
	"strconv"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768 up by default): a port the kernel
// hands out for a listener at :0 may, once that listener is closed, go to one of the cluster's outgoing
// connections before the process it was picked for binds it, and stay taken as long as that connection lives
// (a watch: the whole test).
const lowest, highest = 10000, 32767

// Free returns n distinct ports nothing listens on now, on any address.
func Free(n int) ([]int, error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	out := make([]int, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries == 1000 {
			return nil, errors.Errorf("cannot find %d free ports between %d and %d", n, lowest, highest)
		}
		port := lowest + rand.IntN(highest-lowest+1)
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		listeners = append(listeners, l) // held until all are picked, so none is picked twice
		out = append(out, port)
	}
	return out, nil
}
