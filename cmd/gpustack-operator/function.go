package main

import (
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpustack/gpustack-operator/functions/server"
)

// runFunction serves one composition function over gRPC, as a Crossplane Function package runs it.
func runFunction(args []string) error {
	// k8s.io/apiserver (the worker's settings API) registers go-grpc-prometheus's server metrics at init, under
	// the names the function SDK registers its own with: the function serves a registry of its own instead.
	prometheus.DefaultRegisterer = prometheus.NewRegistry()
	return server.Run(args, os.Getenv)
}
