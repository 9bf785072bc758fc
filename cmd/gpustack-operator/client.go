package main

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/apis/scheme"
)

// newClient returns the configuration of a kubeconfig (the in-cluster one when empty) and a client of the
// operator's scheme over it.
func newClient(kubeconfig string) (*rest.Config, client.Client, error) {
	cfg, err := loadConfig(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot create a client")
	}
	return cfg, c, nil
}

// loadConfig loads the kubeconfig; the in-cluster configuration when it is empty.
func loadConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	return cfg, errors.Wrap(err, "cannot load the kubeconfig")
}
