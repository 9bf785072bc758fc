package gpustack.pod_sliced_single_test

import data.gpustack.pod_sliced_single
import data.lib.testing as t

test_slice_passes if {
	count(pod_sliced_single.violation) == 0 with input.review as t.pod([t.container({
		"huawei.com/npu.sliced": "1", "huawei.com/npu.sliced.memory-percentage": "20",
	})])
}

test_slice_of_two_denied if {
	pod_sliced_single.violation == {{"msg": "spec.containers[0].resources.limits[huawei.com/npu.sliced]: Invalid value: \"2\": a logical slice request is always a single accelerator; multi-accelerator logical slicing is not supported yet"}} with input.review as t.pod([t.container({
		"huawei.com/npu.sliced": "2", "huawei.com/npu.sliced.memory-percentage": "20",
	})])
}

test_missing_budget_denied if {
	pod_sliced_single.violation == {{"msg": "spec.containers[0].resources.limits: Required value: a nvidia.com/gpu.sliced request must set nvidia.com/gpu.sliced.memory-percentage or nvidia.com/gpu.sliced.memory-mib"}} with input.review as t.pod([t.container({"nvidia.com/gpu.sliced": "1"})])
}

test_percentage_out_of_range_denied if {
	pod_sliced_single.violation == {{"msg": "spec.containers[0].resources.limits[nvidia.com/gpu.sliced.memory-percentage]: Invalid value: \"101\": must be greater than 0 and at most 100"}} with input.review as t.pod([t.container({
		"nvidia.com/gpu.sliced": "1", "nvidia.com/gpu.sliced.memory-percentage": "101",
	})])
}
