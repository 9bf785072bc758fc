package gateway

import (
	"net/url"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// MemberKubeconfig is what the gateway takes from a member Secret's kubeconfig: its current context's server,
// CA and inline credentials, nothing else. A member Secret is written by whoever may write Secrets in the
// gateway's namespace; a kubeconfig that names a file, runs a command or reaches through a proxy would make
// the gateway read its own files, run code or send its requests where that writer chose, so such a kubeconfig
// is refused, as Kueue's MultiKueue refuses it.
type MemberKubeconfig struct {
	// Server is the member's API server, an https URL.
	Server string
	// TLSServerName is the name the server's certificate is checked against, when not the server's host.
	TLSServerName string
	// CAData verifies the server's certificate; without it the system's roots do.
	CAData []byte
	// Token, or CertData and KeyData, are the gateway's credentials at the member.
	Token             string
	CertData, KeyData []byte
}

// ParseMemberKubeconfig reads a member Secret's kubeconfig and refuses, naming the field as a kubeconfig spells
// it, anything but an https server, an inline CA and an inline token or client certificate.
func ParseMemberKubeconfig(data []byte) (MemberKubeconfig, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return MemberKubeconfig{}, errors.Wrap(err, "cannot parse the kubeconfig")
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if cfg.CurrentContext == "" || ctx == nil {
		return MemberKubeconfig{}, errors.Errorf("the kubeconfig's current-context %q names no context", cfg.CurrentContext)
	}
	cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cluster == nil {
		return MemberKubeconfig{}, errors.Errorf("context %q names cluster %q, which the kubeconfig does not hold", cfg.CurrentContext, ctx.Cluster)
	}
	if user == nil {
		return MemberKubeconfig{}, errors.Errorf("context %q names user %q, which the kubeconfig does not hold", cfg.CurrentContext, ctx.AuthInfo)
	}
	if err := checkCluster(cluster); err != nil {
		return MemberKubeconfig{}, errors.Wrapf(err, "cluster %q", ctx.Cluster)
	}
	if err := checkUser(user); err != nil {
		return MemberKubeconfig{}, errors.Wrapf(err, "user %q", ctx.AuthInfo)
	}
	return MemberKubeconfig{Server: cluster.Server, TLSServerName: cluster.TLSServerName, CAData: cluster.CertificateAuthorityData,
		Token: user.Token, CertData: user.ClientCertificateData, KeyData: user.ClientKeyData}, nil
}

// checkCluster refuses what a member's cluster entry may not hold.
func checkCluster(c *clientcmdapi.Cluster) error {
	u, err := url.Parse(c.Server)
	switch {
	case err != nil || u.Scheme != "https" || u.Host == "":
		return errors.Errorf("server %q is not an https URL", c.Server)
	case c.InsecureSkipTLSVerify:
		return errors.New("insecure-skip-tls-verify is not allowed: the member's certificate must be verified")
	case c.CertificateAuthority != "":
		return errors.New("certificate-authority (a file) is not allowed: use certificate-authority-data")
	case c.ProxyURL != "":
		return errors.New("proxy-url is not allowed")
	}
	return nil
}

// checkUser refuses what a member's user entry may not hold: only a token or a client certificate, inline.
func checkUser(a *clientcmdapi.AuthInfo) error {
	switch {
	case a.TokenFile != "":
		return errors.New("tokenFile is not allowed: use token")
	case a.ClientCertificate != "" || a.ClientKey != "":
		return errors.New("client-certificate and client-key (files) are not allowed: use client-certificate-data and client-key-data")
	case a.Exec != nil:
		return errors.New("exec is not allowed: the gateway runs no command a Secret names")
	case a.AuthProvider != nil:
		return errors.New("auth-provider is not allowed")
	case a.Username != "" || a.Password != "":
		return errors.New("username and password are not allowed")
	case a.Impersonate != "" || a.ImpersonateUID != "" || len(a.ImpersonateGroups) > 0 || len(a.ImpersonateUserExtra) > 0:
		return errors.New("as, as-uid, as-groups and as-user-extra are not allowed")
	case (len(a.ClientCertificateData) > 0) != (len(a.ClientKeyData) > 0):
		return errors.New("client-certificate-data and client-key-data go together")
	case a.Token == "" && len(a.ClientCertificateData) == 0:
		return errors.New("no credentials: a token or client-certificate-data and client-key-data are needed")
	}
	return nil
}

// RESTConfig is a client configuration of the member with nothing but the kubeconfig's checked fields.
func (k MemberKubeconfig) RESTConfig() *rest.Config {
	return &rest.Config{Host: k.Server, BearerToken: k.Token,
		TLSClientConfig: rest.TLSClientConfig{ServerName: k.TLSServerName, CAData: k.CAData, CertData: k.CertData, KeyData: k.KeyData}}
}

// Kubeconfig writes the checked fields as a kubeconfig of one context, the copy MultiKueue reads.
func (k MemberKubeconfig) Kubeconfig() ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["member"] = &clientcmdapi.Cluster{Server: k.Server, TLSServerName: k.TLSServerName, CertificateAuthorityData: k.CAData}
	cfg.AuthInfos["member"] = &clientcmdapi.AuthInfo{Token: k.Token, ClientCertificateData: k.CertData, ClientKeyData: k.KeyData}
	cfg.Contexts["member"] = &clientcmdapi.Context{Cluster: "member", AuthInfo: "member"}
	cfg.CurrentContext = "member"
	data, err := clientcmd.Write(*cfg)
	return data, errors.Wrap(err, "cannot write the member's kubeconfig")
}
