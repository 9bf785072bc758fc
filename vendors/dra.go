package vendors

import "strings"

// DRADriverSuffix ends every vendor's DRA driver name: nvidia.gpustack.ai.
const DRADriverSuffix = ".gpustack.ai"

// DRADriver is the DRA driver of a vendor's cards (nvidia.gpustack.ai): its ResourceSlices' spec.driver, the
// domain of its devices' attributes, and the name it registers with the kubelet under.
func DRADriver(key string) string { return key + DRADriverSuffix }

// DRADriverVendor returns the vendor whose cards a DRA driver publishes; false for a driver not of this
// project (NVIDIA's own gpu.nvidia.com, say) or of no vendor it knows.
func DRADriverVendor(driver string) (Vendor, bool) {
	key, ok := strings.CutSuffix(driver, DRADriverSuffix)
	if !ok {
		return Vendor{}, false
	}
	v, ok := Lookup(key)
	return v, ok && v.Key == key
}

// DRADeviceClass is the DeviceClass of a vendor's whole cards (gpustack-nvidia), which the chart ships and
// Kueue's configuration maps to the vendor's credits.
func DRADeviceClass(key string) string { return "gpustack-" + key }

// DRACreditsCounter is the counter each card's device consumes from its own counter set: the card's M credits,
// which Kueue charges a claim of the card in (its configuration's counter source), as it charges a device
// plugin's whole card by a resource transformation.
const DRACreditsCounter = "credits"
