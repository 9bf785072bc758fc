package main

import (
	"flag"
	"os"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gpustack/gpustack-operator/cpureporter"
)

// runCPUInfo reports this node's CPU, read from its /proc/cpuinfo, as the node's cpu-info NodeFeature.
func runCPUInfo(args []string) error {
	fs := flag.NewFlagSet("cpu-info", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig; in-cluster configuration when empty")
	node := fs.String("node", os.Getenv("NODE_NAME"), "the node to report for (NODE_NAME, which the DaemonSet sets)")
	file := fs.String("cpuinfo", "/proc/cpuinfo", "the node's cpuinfo (the DaemonSet mounts the host's at /host/proc/cpuinfo)")
	interval := fs.Duration("interval", 5*time.Minute, "how often to report again")
	_ = fs.Parse(args)
	ctrl.SetLogger(zap.New())
	if *node == "" {
		return errors.New("--node or NODE_NAME is required")
	}
	_, c, err := newClient(*kubeconfig)
	if err != nil {
		return err
	}
	return cpureporter.Run(ctrl.SetupSignalHandler(), c, *node, *file, *interval, ctrl.Log.WithName("cpu-info"))
}
