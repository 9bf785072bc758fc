package instancepod

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// Docker Hub's registry as the kubelet names it, and the older name it takes for the same.
const (
	dockerHub       = "docker.io"
	legacyDockerHub = "index.docker.io"
)

// ImageRegistry returns the registry of an image reference, [registry/]path[:tag|@digest], as the kubelet
// names it when it picks the Pod's pull credentials: it normalizes the image as the distribution reference
// library does (a first component with a dot or a colon, localhost, or a capital letter is a registry; any
// other image, and index.docker.io's, is docker.io's), then takes every dockerconfigjson key that matches the
// registry host and a prefix of the path. So the key is docker.io for Docker Hub's images: the kubelet's other
// key for them, index.docker.io, is tried only when no key matches, and a user's own Secret for docker.io in the
// same Pod would shadow it.
func ImageRegistry(ref string) string {
	first, _, hasPath := strings.Cut(ref, "/")
	if !hasPath || first == legacyDockerHub ||
		(!strings.ContainsAny(first, ".:") && first != "localhost" && strings.ToLower(first) == first) {
		return dockerHub
	}
	return first
}

// RegistryAuthSecretName is the Instance's pull Secret of one credential for one registry. The worker may
// create Secrets in the Instance's namespace but neither read nor update them, so the name holds a digest of
// both: a changed credential or registry makes a Secret of a new name, which the next Pod uses, and a Secret
// already there under the name already holds them.
func RegistryAuthSecretName(inst *workerv1.Instance, registry, auth string) string {
	sum := sha256.Sum256([]byte(registry + "\x00" + auth))
	return inst.Name + "-registry-" + hex.EncodeToString(sum[:])[:8]
}

// RegistryAuthSecret returns the Instance's kubernetes.io/dockerconfigjson Secret holding auth
// (container-registry-auth) for registry, named by RegistryAuthSecretName.
func RegistryAuthSecret(inst *workerv1.Instance, registry, auth string) (*corev1.Secret, error) {
	username, password, err := workerv1.SplitRegistryAuth(auth)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read container-registry-auth")
	}
	config, err := dockerConfigJSON(registry, username, password)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: inst.Namespace, Name: RegistryAuthSecretName(inst, registry, auth),
			Labels: map[string]string{workerv1.LabelInstance: inst.Name}},
		Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: config},
	}, nil
}

// registry is the registry the built-in image ref is pulled from: ImageRegistry of the image as Image rewrites
// it, so container-registry's host when that is set.
func (b BuiltInImages) registry(ref string) string { return ImageRegistry(b.Image(ref)) }

// AuthSecretName is the Instance's pull Secret of the built-in image ref (the SSH sidecar's), "" when
// container-registry-auth is not set.
func (b BuiltInImages) AuthSecretName(inst *workerv1.Instance, ref string) string {
	if b.Auth == "" {
		return ""
	}
	return RegistryAuthSecretName(inst, b.registry(ref), b.Auth)
}

// AuthSecret returns the Instance's pull Secret for the built-in image ref (RegistryAuthSecret of the registry
// it is pulled from), nil when container-registry-auth is not set.
func (b BuiltInImages) AuthSecret(inst *workerv1.Instance, ref string) (*corev1.Secret, error) {
	if b.Auth == "" {
		return nil, nil
	}
	return RegistryAuthSecret(inst, b.registry(ref), b.Auth)
}

// DispatchedAuthSecret returns the pull Secret of auth (a member's own container-registry-auth) that the Pod
// of a dispatched Instance lists, nil when it lists none: MultiKueue copies the Pod, whose imagePullSecrets the
// manager rendered, but not the Secret. The member can only make its own credential's Secret, for the registry
// the Pod's SSH sidecar is pulled from; so it makes one when the name the Pod lists is that credential's, which
// holds when the manager and the member have the same container-registry-auth.
func DispatchedAuthSecret(inst *workerv1.Instance, pod *corev1.Pod, auth string) (*corev1.Secret, error) {
	if auth == "" {
		return nil, nil
	}
	for _, c := range pod.Spec.Containers {
		if c.Name != SSHContainer {
			continue
		}
		name := RegistryAuthSecretName(inst, ImageRegistry(c.Image), auth)
		for _, s := range pod.Spec.ImagePullSecrets {
			if s.Name == name {
				return RegistryAuthSecret(inst, ImageRegistry(c.Image), auth)
			}
		}
	}
	return nil, nil
}
