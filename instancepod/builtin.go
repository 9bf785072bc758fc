package instancepod

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// BuiltInImages is how the images the operator brings into an Instance's Pod (the SSH sidecar) are pulled:
// the settings container-registry, container-namespace, image-pull-secrets, image-pull-policy and
// container-registry-auth, so that a cluster without access to Docker Hub pulls them from its own mirror.
type BuiltInImages struct {
	// Registry replaces the image's registry when set.
	Registry string
	// Namespace replaces the image's namespace (the path between the registry and the name) when set.
	Namespace string
	// PullSecrets are added to the Pod's image pull secrets.
	PullSecrets []string
	// PullPolicy is the built-in containers' pull policy; IfNotPresent when empty.
	PullPolicy corev1.PullPolicy
	// Auth is <username>:<password> for the registry the built-in images are pulled from: the Pod pulls with
	// the Instance's Secret of it (AuthSecret), which the worker creates before the Pod. None when empty.
	Auth string
}

// Image rewrites a built-in image reference, [registry/][namespace/]name[:tag|@digest], with the registry and
// namespace set. A first component with a dot or a colon, or localhost, is a registry, as Docker reads it.
func (b BuiltInImages) Image(ref string) string {
	if b.Registry == "" && b.Namespace == "" {
		return ref
	}
	parts := strings.Split(ref, "/")
	registry := ""
	if len(parts) > 1 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost") {
		registry, parts = parts[0], parts[1:]
	}
	name, namespace := parts[len(parts)-1], strings.Join(parts[:len(parts)-1], "/")
	if b.Registry != "" {
		registry = strings.TrimSuffix(b.Registry, "/")
	}
	if b.Namespace != "" {
		namespace = strings.Trim(b.Namespace, "/")
	}
	out := name
	if namespace != "" {
		out = namespace + "/" + out
	}
	if registry != "" {
		out = registry + "/" + out
	}
	return out
}

// pullPolicy is the built-in containers' pull policy.
func (b BuiltInImages) pullPolicy() corev1.PullPolicy {
	if b.PullPolicy == "" {
		return corev1.PullIfNotPresent
	}
	return b.PullPolicy
}

// SplitList splits a comma-separated setting into its trimmed, non-empty items.
func SplitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
