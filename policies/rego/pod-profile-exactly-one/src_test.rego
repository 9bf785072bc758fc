package gpustack.pod_profile_exactly_one_test

import data.gpustack.pod_profile_exactly_one
import data.lib.testing as t

test_profile_of_two_denied if {
	pod_profile_exactly_one.violation == {{"msg": "spec.containers[0].resources.limits[hygon.com/dcu.partitioned.mig-2g.15gb]: Invalid value: \"2\": a partition profile request must be exactly 1 instance"}} with input.review as t.pod([t.container({
		"hygon.com/dcu.partitioned": "1", "hygon.com/dcu.partitioned.mig-2g.15gb": "2",
	})])
}
