// SPDX-License-Identifier: Apache-2.0
/* rdmans-hook: the OCI hook (hook.c says what it does; see rdmans-hook(8)). */
#include "hook.h"

int main(int argc, char **argv)
{
	return hook_main(argc, argv);
}
