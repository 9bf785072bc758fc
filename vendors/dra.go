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
	return byKey(key)
}

// DRADeviceClass is the DeviceClass of a vendor's whole cards (gpustack-nvidia), which the chart ships and
// Kueue's configuration maps to the vendor's credits.
func DRADeviceClass(key string) string { return draDeviceClassPrefix + key }

const draDeviceClassPrefix = "gpustack-"

// DRADeviceClassVendor returns the vendor whose whole cards a DeviceClass selects; false for a class not of
// this project.
func DRADeviceClassVendor(class string) (Vendor, bool) {
	key, ok := strings.CutPrefix(class, draDeviceClassPrefix)
	if !ok {
		return Vendor{}, false
	}
	return byKey(key)
}

// DRACreditsCounter is the counter each card's device consumes from its own counter set: the card's M credits,
// which Kueue charges a claim of the card in (its configuration's counter source), as it charges a device
// plugin's whole card by a resource transformation.
const DRACreditsCounter = "credits"

// byKey returns the vendor of a key, and no alias or display name.
func byKey(key string) (Vendor, bool) {
	if v, ok := Lookup(key); ok && v.Key == key {
		return v, true
	}
	return Vendor{}, false
}
