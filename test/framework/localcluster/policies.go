package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// installPolicies creates the ValidatingAdmissionPolicies and their bindings of every YAML file in the policy
// directories, as an install of the operator does, so the local cluster refuses what a real one refuses.
func (c *Cluster) installPolicies(ctx context.Context) error {
	if len(c.cfg.PolicyPaths) == 0 {
		return nil
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	for _, dir := range c.cfg.PolicyPaths {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return errors.Wrapf(err, "cannot list the policies in %s", dir)
		}
		for _, f := range files {
			if err := applyPolicyFile(ctx, cs, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyPolicyFile creates the policies and bindings of one file.
func applyPolicyFile(ctx context.Context, cs kubernetes.Interface, file string) error {
	policies, bindings, err := ReadPolicyFile(file)
	if err != nil {
		return err
	}
	for _, p := range policies {
		if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return errors.Wrapf(err, "cannot create the ValidatingAdmissionPolicy of %s", file)
		}
	}
	for _, b := range bindings {
		if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return errors.Wrapf(err, "cannot create the ValidatingAdmissionPolicyBinding of %s", file)
		}
	}
	return nil
}

// ReadPolicyFile decodes the ValidatingAdmissionPolicies and their bindings of one YAML file; other kinds are
// left out.
func ReadPolicyFile(file string) ([]*admissionv1.ValidatingAdmissionPolicy, []*admissionv1.ValidatingAdmissionPolicyBinding, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, errors.Wrapf(err, "cannot read %s", file)
	}
	var policies []*admissionv1.ValidatingAdmissionPolicy
	var bindings []*admissionv1.ValidatingAdmissionPolicyBinding
	for _, doc := range strings.Split(string(data), "\n---") {
		var head metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return nil, nil, errors.Wrapf(err, "cannot decode %s", file)
		}
		switch head.Kind {
		case "ValidatingAdmissionPolicy":
			p := &admissionv1.ValidatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict([]byte(doc), p); err != nil {
				return nil, nil, errors.Wrapf(err, "cannot decode the ValidatingAdmissionPolicy of %s", file)
			}
			policies = append(policies, p)
		case "ValidatingAdmissionPolicyBinding":
			b := &admissionv1.ValidatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict([]byte(doc), b); err != nil {
				return nil, nil, errors.Wrapf(err, "cannot decode the ValidatingAdmissionPolicyBinding of %s", file)
			}
			bindings = append(bindings, b)
		}
	}
	return policies, bindings, nil
}
