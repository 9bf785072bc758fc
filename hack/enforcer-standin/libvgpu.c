/*
 * libvgpu.c is a stand-in for HAMi-core's libvgpu.so, the soft-slicing enforcer the device agent's Allocate
 * preloads (through /etc/ld.so.preload) into every process of a container that holds an NVIDIA slice. The real
 * library caps CUDA's and NVML's view of the card at the slice's budget; this machine has no card, so the
 * stand-in only proves the path: that the library reached the node's enforcer directory, that the container
 * loads it, and which budget Allocate gave it.
 *
 * Loaded into a process whose LIBCUDA_LOG_LEVEL is 4 or more (HAMi-core's debug level; Allocate sets 0, so a
 * workload stays quiet), it writes one line to standard error:
 *
 *   [gpustack enforcer stand-in] devices GPU-... memory 4912m cores 100%
 *
 * from NVIDIA_VISIBLE_DEVICES, CUDA_DEVICE_MEMORY_LIMIT_0 and CUDA_DEVICE_SM_LIMIT.
 */
#include <stdio.h>
#include <stdlib.h>

static const char *var(const char *name)
{
	const char *v = getenv(name);
	return v ? v : "(unset)";
}

__attribute__((constructor)) static void report(void)
{
	const char *level = getenv("LIBCUDA_LOG_LEVEL");
	if (!level || atoi(level) < 4)
		return;
	fprintf(stderr, "[gpustack enforcer stand-in] devices %s memory %s cores %s%%\n",
		var("NVIDIA_VISIBLE_DEVICES"), var("CUDA_DEVICE_MEMORY_LIMIT_0"), var("CUDA_DEVICE_SM_LIMIT"));
}
