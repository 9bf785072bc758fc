# Fixtures for the rules' tests: a queued Pod with the given containers, and an Instance request.
package lib.testing

pod(containers) := pod_with(containers, [])

pod_with(containers, init) := {
	"object": {
		"metadata": {"name": "p", "labels": {"kueue.x-k8s.io/queue-name": "gpustack-fnv64-c4680bb149644f1c"}},
		"spec": {"containers": containers, "initContainers": init},
	},
	"namespace": "default",
	"userInfo": {"username": "alice"},
}

container(limits) := {"name": "main", "image": "busybox", "resources": {"limits": limits}}

instance(spec) := {"object": {"spec": spec}, "namespace": "default", "userInfo": {"username": "alice"}}

update(spec, old) := {"object": {"spec": spec}, "oldObject": {"spec": old}, "namespace": "default", "userInfo": {"username": "alice"}}

settings(values) := {"namespace": {"gpustack-system": {"worker.gpustack.ai/v1": {"Setting": {name: {"spec": {"value": v}} |
	some name, v in values
}}}}}
