package main

import (
	"flag"
	"fmt"

	function "github.com/crossplane/function-sdk-go"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/gpustack/gpustack-operator/functions/flavors"
	"github.com/gpustack/gpustack-operator/functions/instancetype"
)

// functions are the composition functions the binary can serve to Crossplane.
var functions = map[string]func() fnv1.FunctionRunnerServiceServer{
	"flavors":      func() fnv1.FunctionRunnerServiceServer { return &flavors.Function{} },
	"instancetype": func() fnv1.FunctionRunnerServiceServer { return &instancetype.Function{} },
}

// runFunction serves one composition function over gRPC, as a Crossplane Function package runs it.
func runFunction(args []string) error {
	if len(args) == 0 || functions[args[0]] == nil {
		return fmt.Errorf("usage: gpustack-operator function <flavors|instancetype> [flags]")
	}
	fs := flag.NewFlagSet("function "+args[0], flag.ExitOnError)
	address := fs.String("address", ":9443", "address to listen on")
	tlsDir := fs.String("tls-certs-dir", "", "directory of tls.crt, tls.key and ca.crt for mTLS; plain text when empty")
	insecure := fs.Bool("insecure", false, "serve without TLS (Crossplane's Development runtime)")
	maxRecv := fs.Int("max-recv-message-size", 16<<20, "largest request accepted, in bytes")
	_ = fs.Parse(args[1:])
	return function.Serve(functions[args[0]](),
		function.Listen("tcp", *address),
		function.MTLSCertificates(*tlsDir),
		function.Insecure(*insecure || *tlsDir == ""),
		function.MaxRecvMessageSize(*maxRecv))
}
