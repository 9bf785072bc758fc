// Command gpustack-operator is the operator's one binary:
//
//	gpustack-operator worker          the control plane: profiler, composer and settings
//	gpustack-operator device-manager  the per-node device manager
//	gpustack-operator cpu-info        reports the node's CPU from /proc/cpuinfo (a DaemonSet on every node)
//	gpustack-operator plan            a dry run of the chain for an inventory file
//	gpustack-operator function NAME   serves a composition function over gRPC for Crossplane
//	gpustack-operator cleanup         removes what the operator created at run time (helm uninstall's hook)
//	gpustack-operator worker-gateway  (wg) the member clusters' InstanceTypes, aggregated, on a unix socket
package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/gpustack/gpustack-operator/providers"
	"github.com/gpustack/gpustack-operator/vendors"
)

// commands maps each subcommand to its entry point.
var commands = map[string]func(args []string) error{
	"plan":           runPlan,
	"worker":         runWorker,
	"device-manager": runDeviceManager,
	"cpu-info":       runCPUInfo,
	"function":       runFunction,
	"cleanup":        runCleanup,
	"worker-gateway": runWorkerGateway,
	"wg":             runWorkerGateway,
}

func main() {
	if len(os.Args) < 2 || commands[os.Args[1]] == nil {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "usage: gpustack-operator <%s> [flags]\n", joinNames(names))
		os.Exit(2)
	}
	// The vendor table and the card grouping are configured once, here: every command looks vendors up and
	// groups cards through them.
	vendors.Configure(os.Getenv)
	err := providers.Configure(os.Getenv)
	if err == nil {
		err = setSoftMemoryLimit(os.Getenv)
	}
	if err == nil {
		err = commands[os.Args[1]](os.Args[2:])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gpustack-operator %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += "|"
		}
		out += n
	}
	return out
}
