// SPDX-License-Identifier: GPL-2.0
/*
 * tprof-info: a dependency-free check of /dev/tprof for guests the C++
 * tools are not built for yet (arm64): TPROF_IOC_GET_INFO, printed as
 * "abi=MAJ.MIN module=VER state=S cpus=ONLINE/IDS features=0xF". Exits 1
 * when the device cannot be opened or the ioctl fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/tprof.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(void)
{
	struct tprof_info info;
	int fd = open("/dev/tprof", O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		printf("open /dev/tprof: %s\n", strerror(errno));
		return 1;
	}
	memset(&info, 0, sizeof(info));
	if (ioctl(fd, TPROF_IOC_GET_INFO, &info) < 0) {
		printf("TPROF_IOC_GET_INFO: %s\n", strerror(errno));
		return 1;
	}
	printf("abi=%u.%u module=0x%x state=%u cpus=%u/%u features=0x%llx\n",
	       info.abi_major, info.abi_minor, info.module_version, info.state,
	       info.nr_online_cpus, info.nr_cpu_ids,
	       (unsigned long long)info.features);
	close(fd);
	return 0;
}
