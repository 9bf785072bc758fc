package webhooks

import (
	"bytes"
	"context"
	"encoding/base64"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,verbs=get;patch,resourceNames=v1.settings.gpustack.ai

// apiService returns an empty APIService of the given name, to read into.
func apiService(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiregistration.k8s.io/v1")
	u.SetKind("APIService")
	u.SetName(name)
	return u
}

// provisionAPIServices writes ca into the caBundle of each named APIService that does not carry it, which the
// chart makes to send an aggregated API to the Service whose names the pair covers. helm creates APIServices after
// Deployments, so one not there yet is waited for up to timeout.
func provisionAPIServices(ctx context.Context, c client.Client, names []string, ca []byte, timeout time.Duration) error {
	for _, name := range names {
		live := apiService(name)
		err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(live), live)
			return err == nil, client.IgnoreNotFound(err)
		})
		if err != nil {
			return errors.Wrapf(err, "APIService %s is not there after %s: the chart installs it (helm upgrade brings it back)", name, timeout)
		}
		if carries(live, ca) {
			continue
		}
		u := apiService(name)
		u.Object["spec"] = map[string]any{"caBundle": base64.StdEncoding.EncodeToString(ca)}
		//nolint:staticcheck // as in applyCA.
		if err := c.Patch(ctx, u, client.Apply, client.FieldOwner(CAFieldManager), client.ForceOwnership); err != nil {
			return errors.Wrapf(err, "cannot write the CA bundle into APIService %s", name)
		}
	}
	return nil
}

// staleAPIService names an APIService of names whose caBundle is not ca; "" when all carry it, or when one is
// not there (Provision says so).
func staleAPIService(ctx context.Context, c client.Client, names []string, ca []byte) (string, error) {
	for _, name := range names {
		live := apiService(name)
		err := c.Get(ctx, client.ObjectKeyFromObject(live), live)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", errors.Wrapf(err, "cannot get APIService %s", name)
		}
		if !carries(live, ca) {
			return "APIService " + name, nil
		}
	}
	return "", nil
}

// carries reports whether an APIService's caBundle is ca.
func carries(apiService *unstructured.Unstructured, ca []byte) bool {
	encoded, _, _ := unstructured.NestedString(apiService.Object, "spec", "caBundle")
	got, err := base64.StdEncoding.DecodeString(encoded)
	return err == nil && bytes.Equal(got, ca)
}
