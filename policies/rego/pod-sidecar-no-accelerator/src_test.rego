package gpustack.pod_sidecar_no_accelerator_test

import data.gpustack.pod_sidecar_no_accelerator
import data.lib.testing as t

test_sidecar_with_card_denied if {
	sidecar := object.union(t.container({"mthreads.com/gpu": "1"}), {"name": "proxy", "restartPolicy": "Always"})
	pod_sidecar_no_accelerator.violation == {{"msg": "spec.initContainers[0].resources.limits: Forbidden: a restartable init container (a native sidecar) may not request an accelerator; move the request to an app container"}} with input.review as t.pod_with([t.container({})], [sidecar])
}

test_plain_init_container_is_not_a_sidecar if {
	count(pod_sidecar_no_accelerator.violation) == 0 with input.review as t.pod_with([t.container({})], [t.container({"mthreads.com/gpu": "1"})])
}
