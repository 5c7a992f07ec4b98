// SPDX-License-Identifier: GPL-2.0
/*
 * Dumpability is the task's exec state (7.x: task->exec_state, with the
 * user namespace the image was made in), not flags of its mm.
 */
#include <linux/sched.h>
#include <linux/sched/exec_state.h>

static bool __maybe_unused check(struct task_struct *t)
{
	struct task_exec_state *es = rcu_dereference_raw(t->exec_state);

	return es->dumpable == TASK_DUMPABLE_OWNER && es->user_ns;
}
