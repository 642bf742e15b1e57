"""What the lab does to the machine, and only to what it created or was configured with.

`target_create` (image -> loop device -> mkfs), `target_mount`, `target_release`, `target_remount`, `target_paths`,
`mounted_target`, `loop_devices`, `zfs_target`, `powercut`, `blockdev`, `mounts`, `safety`, `btrfs`,
`snapshots`, `cgroups` (+ `cgexec`), `sysctl`, `postgres` (one cluster per target), `proc` (external commands),
`zfs` (the lab's pools; with `zfs_commands`, `zfs_properties` and `zfs_daemon`, the zfs-fuse daemon).
"""
