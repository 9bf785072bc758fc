// Package server serves the composition functions over gRPC, as Crossplane runs a Function package: the
// operator binary's `function` subcommand and the functions' own image both call Run.
package server

import (
	"flag"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	function "github.com/crossplane/function-sdk-go"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/gpustack/gpustack-operator/functions/flavors"
	"github.com/gpustack/gpustack-operator/functions/instancetype"
	"github.com/gpustack/gpustack-operator/vendors"
)

// Functions are the composition functions, by the name Run takes.
var Functions = map[string]func() fnv1.FunctionRunnerServiceServer{
	"flavors":      func() fnv1.FunctionRunnerServiceServer { return &flavors.Function{} },
	"instancetype": func() fnv1.FunctionRunnerServiceServer { return &instancetype.Function{} },
}

// Run serves the function args[0] with the flags in args[1:] and the process's environment read through getenv
// (os.Getenv). Crossplane's package manager passes no flags and mounts the mTLS certificates at the path in
// TLS_SERVER_CERTS_DIR; --insecure serves plain text for Crossplane's Development runtime and `crossplane
// render`. The vendor table's GPUSTACK_<MFR>_* overrides apply as in the worker (vendors.Configure).
func Run(args []string, getenv func(string) string) error {
	if len(args) == 0 || Functions[args[0]] == nil {
		return errors.New("usage: <flavors|instancetype> [--address ADDR] [--tls-certs-dir DIR | --insecure]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	address := fs.String("address", ":9443", "address to listen on")
	tlsDir := fs.String("tls-certs-dir", "", "directory of tls.crt, tls.key and ca.crt for mTLS; TLS_SERVER_CERTS_DIR when empty")
	insecure := fs.Bool("insecure", false, "serve without TLS (Crossplane's Development runtime)")
	maxRecv := fs.Int("max-recv-message-size", 16<<20, "largest request accepted, in bytes")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *tlsDir == "" {
		*tlsDir = getenv("TLS_SERVER_CERTS_DIR")
	}
	if *tlsDir == "" && !*insecure {
		return errors.New("no TLS certificates: set --tls-certs-dir or TLS_SERVER_CERTS_DIR, or serve --insecure")
	}
	vendors.Configure(getenv)
	return function.Serve(Functions[args[0]](),
		function.Listen("tcp", *address),
		function.MTLSCertificates(*tlsDir),
		function.Insecure(*insecure),
		function.MaxRecvMessageSize(*maxRecv))
}
