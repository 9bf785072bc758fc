package localcluster

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// installCRDs applies this project's CRDs and those of Kueue (unless NoKueueCRDs) and NFD, and waits until
// all are established.
// It runs before kube-controller-manager starts, so the garbage collector watches every kind from the start.
func (c *Cluster) installCRDs(ctx context.Context) error {
	paths := append([]string{}, c.cfg.CRDPaths...)
	paths = append(paths, filepath.Join(c.cfg.BinDir, "assets", "nfd-crds.yaml"))
	if !c.cfg.NoKueueCRDs {
		paths = append(paths, filepath.Join(c.cfg.BinDir, "assets", "kueue-crds"))
	}
	crds, err := ReadCRDs(paths...)
	if err != nil {
		return err
	}
	cs, err := apiextensionsclient.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	for _, crd := range crds {
		crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		data, err := yaml.Marshal(crd)
		if err != nil {
			return errors.Wrapf(err, "cannot encode CRD %s", crd.Name)
		}
		// Server-side apply: Kueue's workloads CRD is too large for the last-applied annotation.
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, crd.Name, types.ApplyYAMLPatchType, data,
			metav1.PatchOptions{FieldManager: "localcluster", Force: ptr.To(true)}); err != nil {
			return errors.Wrapf(err, "cannot apply CRD %s", crd.Name)
		}
	}
	return c.waitFor(ctx, "CRDs", time.Minute, func(ctx context.Context) error {
		for _, crd := range crds {
			got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !established(got) {
				return errors.Errorf("CRD %s is not established", crd.Name)
			}
		}
		return nil
	})
}

// ReadCRDs reads every CustomResourceDefinition in the given YAML files and directories.
func ReadCRDs(paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, errors.Wrap(err, "cannot read CRDs")
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(p, "*.yaml"))
		if err != nil {
			return nil, errors.Wrap(err, "cannot list CRDs")
		}
		sort.Strings(matches)
		files = append(files, matches...)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, errors.Wrap(err, "cannot read CRD file")
		}
		r := utilyaml.NewYAMLReader(bufioReader(data))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, errors.Wrapf(err, "cannot split %s", f)
			}
			if len(bytes.TrimSpace(doc)) == 0 || !strings.Contains(string(doc), "CustomResourceDefinition") {
				continue
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(doc, crd); err != nil {
				return nil, errors.Wrapf(err, "cannot decode a CRD in %s", f)
			}
			if crd.Kind == "CustomResourceDefinition" {
				crds = append(crds, crd)
			}
		}
	}
	return crds, nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
