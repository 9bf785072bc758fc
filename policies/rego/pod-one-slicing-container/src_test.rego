package gpustack.pod_one_slicing_container_test

import data.gpustack.pod_one_slicing_container
import data.lib.testing as t

slice := {"nvidia.com/gpu.sliced": "1", "nvidia.com/gpu.sliced.memory-percentage": "30"}

test_two_slicing_containers_denied if {
	pod_one_slicing_container.violation == {{"msg": "spec: Forbidden: at most one container may request a slicing family, found 2"}} with input.review as t.pod([t.container(slice), object.union(t.container(slice), {"name": "second"})])
}

test_one_slicing_container_passes if {
	count(pod_one_slicing_container.violation) == 0 with input.review as t.pod([t.container(slice), object.union(t.container({"cpu": "1"}), {"name": "helper"})])
}
