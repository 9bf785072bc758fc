package main

import (
	"os"

	"github.com/gpustack/gpustack-operator/functions/server"
)

// runFunction serves one composition function over gRPC, as a Crossplane Function package runs it.
func runFunction(args []string) error { return server.Run(args, os.Getenv) }
