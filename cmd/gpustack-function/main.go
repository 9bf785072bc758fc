// Command gpustack-function serves one composition function over gRPC: the entrypoint of the Function
// packages' runtime images. It is built without cgo, so the images need no C library.
//
//	gpustack-function flavors|instancetype [--address ADDR] [--tls-certs-dir DIR | --insecure]
package main

import (
	"fmt"
	"os"

	"github.com/gpustack/gpustack-operator/functions/server"
)

func main() {
	if err := server.Run(os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "gpustack-function:", err)
		os.Exit(1)
	}
}
