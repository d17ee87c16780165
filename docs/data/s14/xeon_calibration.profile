polysci-machine-profile 1
# written by ps_machine_calibrate; delete this file to measure again
cpu Intel(R) Xeon(R) Processor
key GenuineIntel-6-a7-1
caches 49152 2097152 33554432
level 1 1.193 403.607
level 2 4.870 192.690
level 3 48.092 30.085
memory 137.554 22.316
peak 249.006 4.1913 2 16
