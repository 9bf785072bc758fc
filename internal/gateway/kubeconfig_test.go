package gateway

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigWith is a kubeconfig of one context, "m", whose cluster and user the edits change.
func kubeconfigWith(t *testing.T, editCluster func(*clientcmdapi.Cluster), editUser func(*clientcmdapi.AuthInfo)) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	c := &clientcmdapi.Cluster{Server: "https://member.example:6443", CertificateAuthorityData: []byte("ca")}
	u := &clientcmdapi.AuthInfo{Token: "token"}
	if editCluster != nil {
		editCluster(c)
	}
	if editUser != nil {
		editUser(u)
	}
	cfg.Clusters["m"], cfg.AuthInfos["m"] = c, u
	cfg.Contexts["m"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "m"}
	cfg.CurrentContext = "m"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseMemberKubeconfig(t *testing.T) {
	type want struct {
		kc  MemberKubeconfig
		err string
	}
	cases := map[string]struct {
		reason  string
		cluster func(*clientcmdapi.Cluster)
		user    func(*clientcmdapi.AuthInfo)
		// noCurrentContext leaves current-context out.
		noCurrentContext bool
		want             want
	}{
		"Token": {
			reason: "An https server, an inline CA and a token are all a member needs.",
			want:   want{kc: MemberKubeconfig{Server: "https://member.example:6443", CAData: []byte("ca"), Token: "token"}},
		},
		"ClientCertificate": {
			reason:  "An inline client certificate and key are credentials too; the TLS server name is kept.",
			cluster: func(c *clientcmdapi.Cluster) { c.TLSServerName = "api.member" },
			user: func(a *clientcmdapi.AuthInfo) {
				a.Token, a.ClientCertificateData, a.ClientKeyData = "", []byte("cert"), []byte("key")
			},
			want: want{kc: MemberKubeconfig{Server: "https://member.example:6443", TLSServerName: "api.member", CAData: []byte("ca"),
				CertData: []byte("cert"), KeyData: []byte("key")}},
		},
		"Exec": {
			reason: "The gateway runs no command a Secret names.",
			user: func(a *clientcmdapi.AuthInfo) {
				a.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1"}
			},
			want: want{err: `user "m": exec is not allowed: the gateway runs no command a Secret names`},
		},
		"TokenFile": {
			reason: "A token file would send the gateway's own service account token to the Secret's server.",
			user: func(a *clientcmdapi.AuthInfo) {
				a.Token, a.TokenFile = "", "/var/run/secrets/kubernetes.io/serviceaccount/token"
			},
			want: want{err: `user "m": tokenFile is not allowed: use token`},
		},
		"ClientCertificateFile": {
			reason: "No file of the gateway's is read.",
			user:   func(a *clientcmdapi.AuthInfo) { a.ClientCertificate, a.ClientKey = "/etc/cert", "/etc/key" },
			want:   want{err: `user "m": client-certificate and client-key (files) are not allowed: use client-certificate-data and client-key-data`},
		},
		"AuthProvider": {
			reason: "Auth providers run the gateway's plugins.",
			user:   func(a *clientcmdapi.AuthInfo) { a.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"} },
			want:   want{err: `user "m": auth-provider is not allowed`},
		},
		"BasicAuth": {
			reason: "Kubernetes serves no basic authentication.",
			user:   func(a *clientcmdapi.AuthInfo) { a.Username, a.Password = "admin", "secret" },
			want:   want{err: `user "m": username and password are not allowed`},
		},
		"Impersonation": {
			reason: "The gateway acts as the credentials say, as no one else.",
			user:   func(a *clientcmdapi.AuthInfo) { a.Impersonate = "system:admin" },
			want:   want{err: `user "m": as, as-uid, as-groups and as-user-extra are not allowed`},
		},
		"HalfACertificate": {
			reason: "A certificate without its key is no credential.",
			user:   func(a *clientcmdapi.AuthInfo) { a.ClientCertificateData = []byte("cert") },
			want:   want{err: `user "m": client-certificate-data and client-key-data go together`},
		},
		"NoCredentials": {
			reason: "An anonymous member read is refused by any member worth reading.",
			user:   func(a *clientcmdapi.AuthInfo) { a.Token = "" },
			want:   want{err: `user "m": no credentials: a token or client-certificate-data and client-key-data are needed`},
		},
		"HTTP": {
			reason:  "A member is reached over TLS only.",
			cluster: func(c *clientcmdapi.Cluster) { c.Server = "http://member.example:8080" },
			want:    want{err: `cluster "m": server "http://member.example:8080" is not an https URL`},
		},
		"InsecureSkipTLSVerify": {
			reason:  "The member's certificate is always verified.",
			cluster: func(c *clientcmdapi.Cluster) { c.InsecureSkipTLSVerify, c.CertificateAuthorityData = true, nil },
			want:    want{err: `cluster "m": insecure-skip-tls-verify is not allowed: the member's certificate must be verified`},
		},
		"CAFile": {
			reason:  "No file of the gateway's is read.",
			cluster: func(c *clientcmdapi.Cluster) { c.CertificateAuthority = "/etc/ca.crt" },
			want:    want{err: `cluster "m": certificate-authority (a file) is not allowed: use certificate-authority-data`},
		},
		"Proxy": {
			reason:  "Requests go to the server, through no proxy the Secret names.",
			cluster: func(c *clientcmdapi.Cluster) { c.ProxyURL = "http://attacker.example:3128" },
			want:    want{err: `cluster "m": proxy-url is not allowed`},
		},
		"NoCurrentContext": {
			reason:           "Which context is meant must be said.",
			noCurrentContext: true,
			want:             want{err: `the kubeconfig's current-context "" names no context`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			data := kubeconfigWith(t, tc.cluster, tc.user)
			if tc.noCurrentContext {
				cfg, _ := clientcmd.Load(data)
				cfg.CurrentContext = ""
				data, _ = clientcmd.Write(*cfg)
			}
			kc, err := ParseMemberKubeconfig(data)
			got := want{kc: kc}
			if err != nil {
				got.err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nParseMemberKubeconfig(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestMemberKubeconfigRoundTrip checks that the copy MultiKueue reads holds what was checked, and passes the
// check again.
func TestMemberKubeconfigRoundTrip(t *testing.T) {
	in := MemberKubeconfig{Server: "https://member.example:6443", TLSServerName: "api.member", CAData: []byte("ca"),
		Token: "token", CertData: []byte("cert"), KeyData: []byte("key")}
	data, err := in.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseMemberKubeconfig(data)
	if err != nil {
		t.Fatalf("ParseMemberKubeconfig(in.Kubeconfig()): %v", err)
	}
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("ParseMemberKubeconfig(in.Kubeconfig()): -want, +got:\n%s", diff)
	}
}
