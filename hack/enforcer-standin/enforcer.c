/*
 * enforcer.c is a stand-in for the vendors' soft-slicing enforcers the device manager's Allocate preloads (through
 * /etc/ld.so.preload) into every process of a container that holds a slice: HAMi-core's libvgpu.so (NVIDIA,
 * Iluvatar), libvrocm.so (AMD), vcann-rt's libvruntime.so (Ascend) and T-Head's hggc_quota.so. The real
 * libraries cap the runtime's view of the card at the slice's budget; this machine has no card, so the stand-in,
 * installed under each of those names, only proves the path: that the library reached the node's enforcer
 * directory, that the container loads it, and which budget Allocate gave it.
 *
 * Loaded into a process whose enforcer debug level is 4 or more (LIBCUDA_LOG_LEVEL, HAMi-core's; LIBHGGC_LOG_LEVEL,
 * ENPU_LOG_LEVEL or VROCM_LOG_LEVEL; Allocate sets at most 1, so a workload stays quiet), it writes one line to
 * standard error:
 *
 *   [gpustack enforcer stand-in] devices GPU-... memory 4912m cores 100%
 *
 * read where the vendor's enforcer reads its budget: the CUDA_DEVICE_* variables, the HGGC_DEVICE_* ones, the
 * VROCM_DEVICE_* ones, or Ascend's /etc/gpustack/npu_info.config; the devices from the vendor's visibility
 * variable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *var(const char *name)
{
	const char *v = getenv(name);
	return v ? v : "(unset)";
}

static int debugging(void)
{
	static const char *levels[] = {"LIBCUDA_LOG_LEVEL", "LIBHGGC_LOG_LEVEL", "ENPU_LOG_LEVEL", "VROCM_LOG_LEVEL"};
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		const char *v = getenv(levels[i]);
		if (v && atoi(v) >= 4)
			return 1;
	}
	return 0;
}

/* ascend reads the memory and AI-core quotas of vcann-rt's configuration file; 0 when there is none. */
static int ascend(char *memory, size_t memory_len, char *cores, size_t cores_len)
{
	FILE *f = fopen("/etc/gpustack/npu_info.config", "r");
	char line[256];
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "memory-quota=", 13))
			snprintf(memory, memory_len, "%sm", line + 13);
		else if (!strncmp(line, "aicore-quota=", 13))
			snprintf(cores, cores_len, "%s", line + 13);
	}
	fclose(f);
	return 1;
}

__attribute__((constructor)) static void report(void)
{
	char memory[300] = "(unset)", cores[300] = "(unset)";
	const char *devices = "(unset)";
	if (!debugging())
		return;
	if (getenv("CUDA_DEVICE_MEMORY_LIMIT_0")) {
		devices = getenv("NVIDIA_VISIBLE_DEVICES") ? var("NVIDIA_VISIBLE_DEVICES") : var("IX_VISIBLE_DEVICES");
		snprintf(memory, sizeof(memory), "%s", var("CUDA_DEVICE_MEMORY_LIMIT_0"));
		snprintf(cores, sizeof(cores), "%s", var("CUDA_DEVICE_SM_LIMIT"));
	} else if (getenv("HGGC_DEVICE_MEMORY_LIMIT_0")) {
		devices = var("PPU_VISIBLE_DEVICES");
		snprintf(memory, sizeof(memory), "%s", var("HGGC_DEVICE_MEMORY_LIMIT_0"));
		snprintf(cores, sizeof(cores), "%s", var("HGGC_DEVICE_SM_LIMIT"));
	} else if (getenv("VROCM_DEVICE_MEMORY_LIMIT_0")) {
		devices = var("AMD_VISIBLE_DEVICES");
		snprintf(memory, sizeof(memory), "%s", var("VROCM_DEVICE_MEMORY_LIMIT_0"));
	} else if (ascend(memory, sizeof(memory), cores, sizeof(cores))) {
		devices = var("ASCEND_VISIBLE_DEVICES");
	}
	fprintf(stderr, "[gpustack enforcer stand-in] devices %s memory %s cores %s%%\n", devices, memory, cores);
}
