package ports

import (
	"net"
	"strconv"
	"testing"
)

func TestFree(t *testing.T) {
	got, err := Free(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range got {
		if p < lowest || p > highest {
			t.Errorf("Free(20): port %d is outside [%d, %d], where the kernel may hand it to a connection", p, lowest, highest)
		}
		if seen[p] {
			t.Errorf("Free(20): port %d picked twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("Free(20): port %d cannot be listened on: %v", p, err)
			continue
		}
		_ = l.Close()
	}
	if len(got) != 20 {
		t.Errorf("Free(20) returned %d ports", len(got))
	}
}
