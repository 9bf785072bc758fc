package localcluster

import (
	"context"
	"os"
	"path/filepath"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/gpustack/gpustack-operator/providers/simulated"
)

// accountKubeconfig writes a kubeconfig with a token of an existing service account (one the chart made), so
// a process outside the cluster acts with exactly that account's permissions, and returns its path.
func (c *Cluster) accountKubeconfig(ctx context.Context, name, namespace string) (string, error) {
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return "", errors.Wrap(err, "cannot create client")
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

// nodeTokens writes, for every one of nodes, a token of the service account bound to that Node object, into
// a directory of files named after the nodes, and returns the directory. Such a token names its node
// (authentication.kubernetes.io/node-name), as the projected token of a DaemonSet Pod on that node does.
func (c *Cluster) nodeTokens(ctx context.Context, account, namespace string, nodes []simulated.Node) (string, error) {
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return "", errors.Wrap(err, "cannot create client")
	}
	dir := c.path("config", account+"-node-tokens")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", errors.Wrap(err, "cannot create the node token directory")
	}
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
