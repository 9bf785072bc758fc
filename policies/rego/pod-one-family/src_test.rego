package gpustack.pod_one_family_test

import data.gpustack.pod_one_family
import data.lib.testing as t

test_one_family_passes if {
	count(pod_one_family.violation) == 0 with input.review as t.pod([t.container({"nvidia.com/gpu": "2"})])
}

test_two_families_denied if {
	pod_one_family.violation == {{"msg": "spec: Forbidden: a Pod may request only one accelerator family, found [exclusive sliced]"}} with input.review as t.pod([t.container({
		"nvidia.com/gpu": "1", "nvidia.com/gpu.sliced": "1", "nvidia.com/gpu.sliced.memory-percentage": "20",
	})])
}

test_two_groups_denied if {
	some v in pod_one_family.violation with input.review as t.pod_with([t.container({"amd.com/gpu": "1"})], [t.container({"amd.com/gpu": "1"})])
	startswith(v.msg, "spec.initContainers: Forbidden: a Pod's accelerator requests must all sit in one container group")
}

test_unqueued_pod_ignored if {
	review := json.remove(t.pod([t.container({"nvidia.com/gpu": "1", "nvidia.com/gpu.shared": "1"})]), ["object/metadata/labels"])
	count(pod_one_family.violation) == 0 with input.review as review
}
