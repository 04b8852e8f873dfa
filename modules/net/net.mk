# lwIP in the kernel: fetched from Debian's source package into $(BUILD)/lwip
# (tools/fetch-lwip.sh, once), compiled with the kernel's flags against the
# project's port files in modules/net/include, and linked into the kernel.
# Included by the top-level Makefile after KERNEL_OBJS is set; uses its
# BUILD, CC, KERNEL_CFLAGS, Q, say and STAMP_DEPS.

LWIP_DIR := $(BUILD)/lwip
LWIP_STAMP := $(LWIP_DIR)/src/core/tcp.c
LWIP_INCLUDES := -Imodules/net/include -I$(LWIP_DIR)/src/include

# The core (IPv4, TCP, UDP, ICMP, raw, ARP, DHCP), the netconn and socket APIs
# with the tcpip thread, and Ethernet.
LWIP_SOURCES := $(addprefix core/,init.c def.c inet_chksum.c ip.c mem.c memp.c netif.c pbuf.c \
	raw.c stats.c sys.c tcp.c tcp_in.c tcp_out.c timeouts.c udp.c) \
	$(addprefix core/ipv4/,dhcp.c etharp.c icmp.c ip4.c ip4_addr.c ip4_frag.c) \
	$(addprefix api/,api_lib.c api_msg.c err.c netbuf.c sockets.c tcpip.c) \
	netif/ethernet.c
LWIP_OBJS := $(patsubst %.c,$(BUILD)/lwip-obj/%.o,$(LWIP_SOURCES))

# lwIP is third-party code: the kernel's flags, minus the warnings its sources
# were not written for.  The project's own files keep every warning.
LWIP_CFLAGS := $(KERNEL_CFLAGS) $(LWIP_INCLUDES) -Wno-error=address -Wno-sign-compare \
	-Wno-missing-prototypes -Wno-implicit-fallthrough -Wno-type-limits

NET_OBJS := $(filter $(BUILD)/obj/modules/net/% $(BUILD)/obj-test/modules/net/%,\
	$(KERNEL_OBJS) $(KERNEL_TEST_OBJS))
KERNEL_SHARED_OBJS += $(LWIP_OBJS)

.PHONY: lwip
lwip: $(LWIP_STAMP)
deps: $(LWIP_STAMP)

# Fetched only when missing: the source package is a fixed Debian version.
$(LWIP_STAMP): tools/fetch-lwip.sh | $(STAMP_DEPS)
	$(say) LWIP $(LWIP_DIR)
	$(Q)sh tools/fetch-lwip.sh $(LWIP_DIR)
	$(Q)touch $@

$(BUILD)/lwip-obj/%.o: $(LWIP_STAMP) $(CC)
	$(say) CC lwip/src/$*.c
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(LWIP_CFLAGS) -c $(LWIP_DIR)/src/$*.c -o $@

# The port and the socket layer see lwIP's headers, after it is fetched.
$(NET_OBJS): KERNEL_CFLAGS += $(LWIP_INCLUDES)
$(NET_OBJS): | $(LWIP_STAMP)

-include $(shell find $(BUILD)/lwip-obj -name '*.d' 2>/dev/null)
