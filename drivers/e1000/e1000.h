/*
 * The e1000 driver: Intel 82540EM (QEMU's -device e1000).  It binds to the
 * PCI function, resets it, reads the MAC from the EEPROM, sets up receive and
 * transmit descriptor rings and registers a NIC named "e1000.N"; everything
 * after that goes through drivers/net (nic.h).  Counters by name: the
 * statistics registers (GPRC, GPTC, GORC, GOTC, MPC, CRCERRS, ...) accumulated
 * in software, and the driver's own (rx_packets, tx_ring_full, ...).
 *
 *     struct nic *nic = nic_find("e1000.0");
 *     uint64_t missed;
 *     nic_read_counter(nic, "MPC", &missed);
 */
#ifndef DRIVERS_E1000_E1000_H
#define DRIVERS_E1000_E1000_H

#define E1000_VENDOR_INTEL   0x8086
#define E1000_DEVICE_82540EM 0x100e

/* Number of e1000 functions the driver took. */
unsigned e1000_count(void);

#endif
