// SPDX-License-Identifier: GPL-2.0
/*
 * The generic netlink family of PMU programs (TPROF_PMU_GENL_NAME).
 *
 * A monitor subscribes by sending TPROF_PMU_CMD_SUBSCRIBE with a program
 * descriptor of its own process: genetlink runs the handler in the
 * sender's context, so the descriptor is looked up in the sender's table
 * and holding it is the permission. Events are queued on that socket
 * only: the program holds the socket itself, not its port id. A port id
 * is free for another socket to bind from the moment netlink_release()
 * unhashes the closing one, before NETLINK_URELEASE is announced, and a
 * send that read the port id before then would reach the new owner. A
 * closing socket is SOCK_DEAD, and is dropped by the next send or by the
 * NETLINK_URELEASE notification, whichever comes first.
 *
 * Every generic netlink socket on the machine announces its release, so
 * the notification must cost little: programs with a monitor are indexed
 * by the monitor's port id, under a spinlock of their own, and a release
 * looks at its port id's bucket only.
 */
#include <linux/file.h>
#include <linux/hashtable.h>
#include <linux/netlink.h>
#include <linux/notifier.h>
#include <net/genetlink.h>
#include <net/sock.h>
#include "pmu.h"

static const struct nla_policy tprof_pmu_policy[TPROF_PMU_A_MAX + 1] = {
	[TPROF_PMU_A_PROGRAM_FD] = { .type = NLA_U32 },
	[TPROF_PMU_A_EVENT] = { .type = NLA_BINARY,
				.len = sizeof(struct tprof_pmu_event) },
};

static struct genl_family tprof_pmu_family;

/*
 * Programs with a monitor, by its port id. The lock nests outside each
 * program's monitor_lock; the send path takes only the latter.
 */
static DEFINE_HASHTABLE(tprof_pmu_monitored, 8);
static DEFINE_SPINLOCK(tprof_pmu_monitored_lock);

static void tprof_pmu_set_monitor(struct tprof_pmu_prog *p, struct sock *sk,
				  u32 portid)
{
	struct sock *old;

	sock_hold(sk);
	spin_lock_bh(&tprof_pmu_monitored_lock);
	spin_lock(&p->monitor_lock);
	old = p->monitor;
	p->monitor = sk;
	spin_unlock(&p->monitor_lock);
	hash_del(&p->monitor_node);
	p->monitor_portid = portid;
	hash_add(tprof_pmu_monitored, &p->monitor_node, portid);
	spin_unlock_bh(&tprof_pmu_monitored_lock);
	if (old)
		sock_put(old);
}

/* Drops the monitor if it is sk (any monitor for NULL). */
static void tprof_pmu_drop_monitor_if(struct tprof_pmu_prog *p,
				      struct sock *sk)
{
	struct sock *old = NULL;

	spin_lock_bh(&tprof_pmu_monitored_lock);
	spin_lock(&p->monitor_lock);
	if (!sk || p->monitor == sk) {
		old = p->monitor;
		p->monitor = NULL;
	}
	spin_unlock(&p->monitor_lock);
	if (!p->monitor)
		hash_del(&p->monitor_node);
	spin_unlock_bh(&tprof_pmu_monitored_lock);
	if (old)
		sock_put(old);
}

void tprof_pmu_drop_monitor(struct tprof_pmu_prog *p)
{
	tprof_pmu_drop_monitor_if(p, NULL);
}

/* An empty TPROF_PMU_CMD_SUBSCRIBE message to the subscribing socket. */
static int tprof_pmu_reply_subscribed(struct genl_info *info)
{
	struct sk_buff *skb;
	void *hdr;

	skb = genlmsg_new(0, GFP_KERNEL);
	if (!skb)
		return -ENOMEM;
	hdr = genlmsg_put_reply(skb, info, &tprof_pmu_family, 0,
				TPROF_PMU_CMD_SUBSCRIBE);
	if (!hdr) {
		nlmsg_free(skb);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return genlmsg_reply(skb, info);	/* frees skb */
}

static int tprof_pmu_subscribe(struct sk_buff *skb, struct genl_info *info)
{
	struct tprof_pmu_prog *p;
	struct file *file;
	int ret;

	if (!info->attrs[TPROF_PMU_A_PROGRAM_FD])
		return -EINVAL;
	file = fget(nla_get_u32(info->attrs[TPROF_PMU_A_PROGRAM_FD]));
	if (!file)
		return -EBADF;
	p = tprof_pmu_prog_from_file(file);
	if (!p) {
		fput(file);
		return -EINVAL;
	}
	/*
	 * The reply goes out before the monitor is set, so it is queued on
	 * the socket ahead of every event of this program. The netlink ACK
	 * comes only after the handler returns, behind events that may have
	 * filled the receive buffer meanwhile, and is then dropped: a
	 * monitor waiting for it would wait forever.
	 */
	ret = tprof_pmu_reply_subscribed(info);
	if (ret) {
		fput(file);
		return ret;
	}
	/* The sending socket (the request's sender, alive while it sends). */
	tprof_pmu_set_monitor(p, NETLINK_CB(skb).sk, info->snd_portid);
	/* Events queued before the subscription go out now. */
	queue_work(system_unbound_wq, &p->send_work);
	fput(file);
	return 0;
}

/* Queues one event on the monitor's socket itself, never by port id. */
static int tprof_pmu_send(struct sock *sk, const struct tprof_pmu_event *ev)
{
	struct sk_buff *skb;
	void *hdr;
	int ret;

	skb = genlmsg_new(nla_total_size(sizeof(*ev)), GFP_KERNEL);
	if (!skb)
		return -ENOMEM;
	hdr = genlmsg_put(skb, 0, 0, &tprof_pmu_family, 0, TPROF_PMU_CMD_EVENT);
	if (!hdr || nla_put(skb, TPROF_PMU_A_EVENT, sizeof(*ev), ev)) {
		nlmsg_free(skb);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	/* Full receive buffer: -ENOMEM; the skb is still ours then. */
	ret = sock_queue_rcv_skb(sk, skb);
	if (ret)
		kfree_skb(skb);
	return ret;
}

/*
 * The program's one consumer of its queue. An event that cannot reach
 * the monitor (no memory, receive buffer full) is counted as lost and the
 * next delivered event says so; without a monitor (or with a closing one)
 * events wait in the queue (then new ones are lost when it is full).
 */
void tprof_pmu_send_work(struct work_struct *work)
{
	struct tprof_pmu_prog *p = container_of(work, struct tprof_pmu_prog,
						send_work);
	struct tprof_pmu_event ev;
	struct sock *sk;
	int ret;

	for (;;) {
		spin_lock_bh(&p->monitor_lock);
		sk = p->monitor;
		if (sk)
			sock_hold(sk);
		spin_unlock_bh(&p->monitor_lock);
		if (!sk)
			return;
		if (sock_flag(sk, SOCK_DEAD)) {
			tprof_pmu_drop_monitor_if(p, sk);
			sock_put(sk);
			return;
		}
		if (!tprof_pmu_pop(p, &ev)) {
			sock_put(sk);
			return;
		}
		ev.lost = atomic64_xchg(&p->lost_pending, 0);
		/*
		 * Counted before it is sent: a monitor that reads it and then
		 * PMU_READ at once never sees more delivered than sent (found
		 * by the fuzzer). A send that fails takes it back.
		 */
		atomic64_inc(&p->sent);
		ret = tprof_pmu_send(sk, &ev);
		sock_put(sk);
		if (ret) {
			atomic64_dec(&p->sent);
			atomic64_add(ev.lost + 1, &p->lost_pending);
			atomic64_inc(&p->lost);
		}
		cond_resched();
	}
}

/*
 * A generic netlink socket closes: drop it where it is a monitor (it is
 * SOCK_DEAD by now). Its port id finds the candidates; the flag tells the
 * closing socket from a new one that took the port id meanwhile. One at a
 * time, so that the last reference goes with no lock held.
 */
static int tprof_pmu_netlink_event(struct notifier_block *nb,
				   unsigned long event, void *ptr)
{
	struct netlink_notify *n = ptr;
	struct tprof_pmu_prog *p;
	struct sock *dead;

	if (event != NETLINK_URELEASE || n->protocol != NETLINK_GENERIC)
		return NOTIFY_DONE;
	do {
		dead = NULL;
		spin_lock_bh(&tprof_pmu_monitored_lock);
		hash_for_each_possible(tprof_pmu_monitored, p, monitor_node,
				       n->portid) {
			if (p->monitor_portid != n->portid)
				continue;
			spin_lock(&p->monitor_lock);
			if (p->monitor && sock_flag(p->monitor, SOCK_DEAD) &&
			    net_eq(sock_net(p->monitor), n->net)) {
				dead = p->monitor;
				p->monitor = NULL;
			}
			spin_unlock(&p->monitor_lock);
			if (dead) {
				hash_del(&p->monitor_node);
				break;
			}
		}
		spin_unlock_bh(&tprof_pmu_monitored_lock);
		if (dead)
			sock_put(dead);
	} while (dead);
	return NOTIFY_DONE;
}

static struct notifier_block tprof_pmu_netlink_notifier = {
	.notifier_call = tprof_pmu_netlink_event,
};

static const struct genl_small_ops tprof_pmu_ops[] = {
	{
		.cmd = TPROF_PMU_CMD_SUBSCRIBE,
		.validate = GENL_DONT_VALIDATE_STRICT | GENL_DONT_VALIDATE_DUMP,
		.doit = tprof_pmu_subscribe,
	},
};

static struct genl_family tprof_pmu_family __ro_after_init = {
	.name = TPROF_PMU_GENL_NAME,
	.version = TPROF_PMU_GENL_VERSION,
	.maxattr = TPROF_PMU_A_MAX,
	.policy = tprof_pmu_policy,
	.netnsok = true,
	.module = THIS_MODULE,
	.small_ops = tprof_pmu_ops,
	.n_small_ops = ARRAY_SIZE(tprof_pmu_ops),
	.resv_start_op = TPROF_PMU_CMD_EVENT + 1,
};

int tprof_pmu_netlink_init(void)
{
	int ret = genl_register_family(&tprof_pmu_family);

	if (ret) {
		pr_err("cannot register generic netlink family %s: %d\n",
		       TPROF_PMU_GENL_NAME, ret);
		return ret;
	}
	ret = netlink_register_notifier(&tprof_pmu_netlink_notifier);
	if (ret)
		genl_unregister_family(&tprof_pmu_family);
	return ret;
}

void tprof_pmu_netlink_exit(void)
{
	netlink_unregister_notifier(&tprof_pmu_netlink_notifier);
	genl_unregister_family(&tprof_pmu_family);
}
