package localcluster

import (
	"context"
	"os"
	"path/filepath"

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

	"github.com/gpustack/gpustack-operator/package/rbac"
)

// serviceAccount gives one operator component its own identity in its namespace, as its Deployment or
// DaemonSet would have: a service account bound to the roles generated from the code's RBAC markers
// (package/rbac/<component>/), and a kubeconfig with a token of that account. The component then runs with
// exactly those permissions.
func (c *Cluster) serviceAccount(ctx context.Context, component, namespace string) (string, error) {
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return "", errors.Wrap(err, "cannot create client")
	}
	if err := ensureNamespace(ctx, cs, namespace); err != nil {
		return "", err
	}
	name := rbac.ServiceAccountName(component)
	objs, err := rbac.For(component, namespace)
	if err != nil {
		return "", err
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			_, err = cs.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = cs.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			// A role may live in the system namespace, which the worker creates when it runs first.
			if err = ensureNamespace(ctx, cs, o.Namespace); err == nil {
				_, err = cs.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
			}
		case *rbacv1.RoleBinding:
			_, err = cs.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return "", errors.Wrapf(err, "cannot create %T %s", o, o.GetName())
		}
	}
	token, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
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

// nodeTokens writes, for every inventory node, a token of the service account bound to that Node object, into
// a directory of files named after the nodes, and returns the directory. Such a token names its node
// (authentication.kubernetes.io/node-name), as the projected token of a DaemonSet Pod on that node does.
func (c *Cluster) nodeTokens(ctx context.Context, account, namespace string) (string, error) {
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return "", errors.Wrap(err, "cannot create client")
	}
	dir := c.path("config", account+"-node-tokens")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", errors.Wrap(err, "cannot create the node token directory")
	}
	nodes := c.cfg.Inventory.Nodes
	if err := parallel(ctx, len(nodes), func(ctx context.Context, i int) error {
		node, err := cs.CoreV1().Nodes().Get(ctx, nodes[i].Name, metav1.GetOptions{})
		if err != nil {
			return errors.Wrapf(err, "cannot get node %s", nodes[i].Name)
		}
		token, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, account, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](30 * 24 * 3600),
				BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: node.Name, UID: node.UID}},
		}, metav1.CreateOptions{})
		if err != nil {
			return errors.Wrapf(err, "cannot request a token of %s bound to node %s", account, node.Name)
		}
		return errors.Wrap(os.WriteFile(filepath.Join(dir, node.Name), []byte(token.Status.Token), 0o600), "cannot write a node token")
	}); err != nil {
		return "", err
	}
	return dir, nil
}
