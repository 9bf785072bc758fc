package gpustack.pod_one_profile_test

import data.gpustack.pod_one_profile
import data.lib.testing as t

test_two_profiles_denied if {
	pod_one_profile.violation == {{"msg": "spec: Forbidden: a Pod may request only one partition profile, found [1g.10gb 3g.40gb]"}} with input.review as t.pod([t.container({
		"nvidia.com/gpu.partitioned": "1", "nvidia.com/gpu.partitioned.mig-3g.40gb": "1", "nvidia.com/gpu.partitioned.mig-1g.10gb": "1",
	})])
}

test_units_are_no_profile if {
	count(pod_one_profile.violation) == 0 with input.review as t.pod([t.container({
		"nvidia.com/gpu.partitioned": "1", "nvidia.com/gpu.partitioned.mig-3g.40gb": "1", "nvidia.com/gpu.partitioned.units": "800000",
	})])
}
