package gpustack.pod_partitioned_single_test

import data.gpustack.pod_partitioned_single
import data.lib.testing as t

test_partition_passes if {
	count(pod_partitioned_single.violation) == 0 with input.review as t.pod([t.container({
		"nvidia.com/gpu.partitioned": "1", "nvidia.com/gpu.partitioned.mig-3g.40gb": "1",
	})])
}

test_partition_without_profile_denied if {
	pod_partitioned_single.violation == {{"msg": "spec.containers[0].resources.limits: Required value: a nvidia.com/gpu.partitioned request must name a profile, e.g. nvidia.com/gpu.partitioned.<kind>-<profile>"}} with input.review as t.pod([t.container({"nvidia.com/gpu.partitioned": "1"})])
}
