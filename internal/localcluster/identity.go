package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// operatorNamespace is where the operator's service accounts live.
const operatorNamespace = "gpustack-system"

// serviceAccount gives one operator component its own identity, as its Deployment or DaemonSet would have:
// a service account bound to the roles generated from the code's RBAC markers (package/rbac/<component>/), and
// a kubeconfig with a token of that account. The component then runs with exactly those permissions.
func (c *Cluster) serviceAccount(ctx context.Context, component string) (string, error) {
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return "", errors.Wrap(err, "cannot create client")
	}
	if err := ensureNamespace(ctx, cs, operatorNamespace); err != nil {
		return "", err
	}
	name := "gpustack-operator-" + component
	data, err := os.ReadFile(filepath.Join(c.cfg.RBACDir, component, "role.yaml"))
	if err != nil {
		return "", errors.Wrapf(err, "cannot read the roles of %s", component)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts(operatorNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", errors.Wrapf(err, "cannot create service account %s", name)
	}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNamespace, Name: name}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		switch {
		case strings.Contains(doc, "kind: ClusterRole\n"):
			role := &rbacv1.ClusterRole{}
			if err := yaml.Unmarshal([]byte(doc), role); err != nil {
				return "", errors.Wrapf(err, "cannot decode the cluster role of %s", component)
			}
			if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return "", errors.Wrapf(err, "cannot create cluster role %s", role.Name)
			}
			binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, Subjects: []rbacv1.Subject{subject},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}}
			if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return "", errors.Wrapf(err, "cannot bind cluster role %s", role.Name)
			}
		case strings.Contains(doc, "kind: Role\n"):
			role := &rbacv1.Role{}
			if err := yaml.Unmarshal([]byte(doc), role); err != nil {
				return "", errors.Wrapf(err, "cannot decode the role of %s", component)
			}
			if _, err := cs.RbacV1().Roles(role.Namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return "", errors.Wrapf(err, "cannot create role %s", role.Name)
			}
			binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: role.Namespace, Name: role.Name},
				Subjects: []rbacv1.Subject{subject}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}}
			if _, err := cs.RbacV1().RoleBindings(role.Namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return "", errors.Wrapf(err, "cannot bind role %s", role.Name)
			}
		}
	}
	token, err := cs.CoreV1().ServiceAccounts(operatorNamespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](30 * 24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", errors.Wrapf(err, "cannot request a token for %s", name)
	}
	ca, err := os.ReadFile(c.path("pki", "ca.crt"))
	if err != nil {
		return "", errors.Wrap(err, "cannot read CA")
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.RESTConfig.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name}
	cfg.CurrentContext = "local"
	path := c.path("config", name+".kubeconfig")
	return path, errors.Wrap(clientcmd.WriteToFile(*cfg, path), "cannot write kubeconfig")
}
