// Package rbac carries the roles generated from the code's RBAC markers (one folder per component) into the
// binaries, so that what the operator deploys, what the local cluster runs and what the tests check are the
// same generated files.
package rbac

import (
	"embed"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

//go:embed worker/role.yaml device-manager/role.yaml cpu-info/role.yaml cleanup/role.yaml worker-gateway/role.yaml device-manager-node-scope.yaml worker-gateway-member.yaml
var files embed.FS

// NodeScope returns the ValidatingAdmissionPolicy and its binding that keep each device manager to its own
// node's Devices, NodeFeature and DRA ResourceSlices (device-manager-node-scope.yaml, which the chart ships as it is).
func NodeScope() ([]client.Object, error) {
	data, err := files.ReadFile("device-manager-node-scope.yaml")
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the device managers' node scope")
	}
	policy, binding := &admissionv1.ValidatingAdmissionPolicy{}, &admissionv1.ValidatingAdmissionPolicyBinding{}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		return nil, errors.Errorf("the device managers' node scope has %d documents, want a policy and its binding", len(docs))
	}
	if err := yaml.UnmarshalStrict([]byte(docs[0]), policy); err != nil {
		return nil, errors.Wrap(err, "cannot decode the device managers' node-scope policy")
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), binding); err != nil {
		return nil, errors.Wrap(err, "cannot decode the device managers' node-scope binding")
	}
	return []client.Object{policy, binding}, nil
}

// GatewayMember returns the ClusterRole a member cluster grants the worker-gateway's reader account
// (worker-gateway-member.yaml): its types, Instances, volumes and queues read, and the Workloads and Pods
// MultiKueue dispatches there written.
func GatewayMember() (*rbacv1.ClusterRole, error) {
	data, err := files.ReadFile("worker-gateway-member.yaml")
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the worker-gateway's member role")
	}
	role := &rbacv1.ClusterRole{}
	return role, errors.Wrap(yaml.UnmarshalStrict(data, role), "cannot decode the worker-gateway's member role")
}

// ServiceAccountName is the service account of a component (gpustack-operator-device-manager).
func ServiceAccountName(component string) string { return "gpustack-operator-" + component }

// For returns a component's service account in namespace, its generated ClusterRole and Roles, and bindings
// of each to the service account.
func For(component, namespace string) ([]client.Object, error) {
	data, err := files.ReadFile(component + "/role.yaml")
	if err != nil {
		return nil, errors.Wrapf(err, "no generated roles for component %q", component)
	}
	name := ServiceAccountName(component)
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
	out := []client.Object{&corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
	}}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		switch {
		case strings.Contains(doc, "kind: ClusterRole\n"):
			role := &rbacv1.ClusterRole{}
			if err := yaml.Unmarshal([]byte(doc), role); err != nil {
				return nil, errors.Wrapf(err, "cannot decode the cluster role of %s", component)
			}
			out = append(out, role, &rbacv1.ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Name: role.Name}, Subjects: []rbacv1.Subject{subject},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}})
		case strings.Contains(doc, "kind: Role\n"):
			role := &rbacv1.Role{}
			if err := yaml.Unmarshal([]byte(doc), role); err != nil {
				return nil, errors.Wrapf(err, "cannot decode the role of %s", component)
			}
			out = append(out, role, &rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: metav1.ObjectMeta{Namespace: role.Namespace, Name: role.Name}, Subjects: []rbacv1.Subject{subject},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}})
		}
	}
	return out, nil
}
