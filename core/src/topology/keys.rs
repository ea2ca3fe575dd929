//! The keys the kernel prints in each kind of topology file, with their sysfs names, widths and
//! kernel order, and the typed property records that hold their values.
//!
//! Each key set is an enum (`NodeKey`, `MemBankKey`, `CacheKey`, `LinkKey`, `SystemKey`) with
//! `ALL` (kernel print order, KERNEL-CONTRACT §1.3–1.8), [`name`](NodeKey::name) and
//! [`from_name`](NodeKey::from_name). `from_name` is a compile-time perfect hash: one hash of the
//! name's bytes, one table load and one byte comparison, whatever the number of keys.
//!
//! Each record (`NodeProperties`, …) has one typed field per key (`u32` for the kernel's `%u`
//! keys, `u64` for `%llu`), a presence bit per key, a getter per key returning `Option`, and a
//! generic [`get`](NodeProperties::get). A key the file did not contain reads as `None`.

/// Width of a key's value as the kernel prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Width {
    /// `%u`: a `u32`. A larger value in a file is reported as out of range.
    U32,
    /// `%llu`: a `u64`.
    U64,
}

/// A value that does not fit the key's width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutOfRange;

/// Conversion of a parsed decimal `u64` into a field type.
pub(crate) trait FieldValue: Sized + Copy {
    const WIDTH: Width;
    fn from_u64(v: u64) -> Option<Self>;
}

impl FieldValue for u32 {
    const WIDTH: Width = Width::U32;
    #[inline]
    fn from_u64(v: u64) -> Option<Self> {
        u32::try_from(v).ok()
    }
}

impl FieldValue for u64 {
    const WIDTH: Width = Width::U64;
    #[inline]
    fn from_u64(v: u64) -> Option<Self> {
        Some(v)
    }
}

/// Packs a name into two words that differ for any two names of one key set: the first and
/// the last 8, 4 or 2 bytes (overlapping for lengths between), and the length. No loop: a
/// short name costs two loads. (If two names of a set collided here, no seed could separate
/// them and the build would fail.)
#[inline(always)]
const fn words(bytes: &[u8]) -> (u64, u64) {
    let n = bytes.len() as u64;
    if let (Some(first), Some(last)) = (bytes.first_chunk::<8>(), bytes.last_chunk::<8>()) {
        return (u64::from_le_bytes(*first), u64::from_le_bytes(*last) ^ n);
    }
    if let (Some(first), Some(last)) = (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        return (u32::from_le_bytes(*first) as u64 | (u32::from_le_bytes(*last) as u64) << 32, n);
    }
    if let (Some(first), Some(last)) = (bytes.first_chunk::<2>(), bytes.last_chunk::<2>()) {
        return (u16::from_le_bytes(*first) as u64 | (u16::from_le_bytes(*last) as u64) << 16, n);
    }
    match bytes.first() {
        Some(b) => (*b as u64, n),
        None => (0, n),
    }
}

/// A seeded multiply-xorshift hash of [`words`]: a handful of instructions per key,
/// independent of its length.
#[inline(always)]
const fn hash((a, b): (u64, u64), seed: u32) -> u32 {
    let mut x = a ^ b.rotate_left(29) ^ (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 29;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    (x >> 32) as u32
}

const EMPTY_SLOT: u8 = u8::MAX;

/// A minimal perfect-hash index from key name to key position, built at compile time, with
/// the [`words`] of each of the `N` names (so a lookup compares words, not bytes).
pub(crate) struct KeyIndex<const SLOTS: usize, const N: usize> {
    seed: u32,
    slots: [u8; SLOTS],
    words: [(u64, u64); N],
}

impl<const SLOTS: usize, const N: usize> KeyIndex<SLOTS, N> {
    /// Searches a seed for which every name lands in its own slot. Evaluated in a `const`, so a
    /// table without a collision-free seed (or with more than 254 names) fails the build.
    #[cfg_attr(
        not(test),
        expect(
            clippy::indexing_slicing,
            clippy::panic,
            reason = "compile-time construction: an out-of-range index or a failed search \
                      stops the build, never a running program"
        )
    )]
    pub(crate) const fn build(names: &[&str]) -> Self {
        assert!(SLOTS.is_power_of_two() && names.len() < EMPTY_SLOT as usize);
        assert!(names.len() <= SLOTS && names.len() == N);
        let mut name_words = [(0u64, 0u64); N];
        let mut i = 0;
        while i < N {
            name_words[i] = words(names[i].as_bytes());
            i = i.saturating_add(1);
        }
        let mut seed = 0u32;
        loop {
            let mut slots = [EMPTY_SLOT; SLOTS];
            let mut i = 0;
            let mut ok = true;
            while i < names.len() {
                let h = hash(name_words[i], seed) as usize & SLOTS.wrapping_sub(1);
                if slots[h] != EMPTY_SLOT {
                    ok = false;
                    break;
                }
                slots[h] = i as u8;
                i = i.saturating_add(1);
            }
            if ok {
                return Self { seed, slots, words: name_words };
            }
            seed = seed.saturating_add(1);
            if seed > 100_000 {
                panic!("no perfect-hash seed found; raise SLOTS");
            }
        }
    }

    /// The length of `names[i]` when `text` starts with it: the name's [`words`] against those
    /// of `text`'s first bytes, no hash and no search for the key's end.
    #[inline(always)]
    pub(crate) fn starts(&self, names: &[&str], i: usize, text: &[u8]) -> Option<usize> {
        let name = names.get(i)?.as_bytes();
        let head = text.get(..name.len())?;
        (words(head) == *self.words.get(i)? && same_name(name, head)).then_some(name.len())
    }

    /// The position of `name` in `names`, if it is one of them.
    #[inline]
    pub(crate) fn find(&self, names: &[&str], name: &[u8]) -> Option<usize> {
        let w = words(name);
        let h = hash(w, self.seed) as usize & SLOTS.wrapping_sub(1);
        let i = usize::from(*self.slots.get(h)?);
        (*self.words.get(i)? == w && same_name(names.get(i)?.as_bytes(), name)).then_some(i)
    }
}

/// `a == b` for two names whose [`words`] are equal, inline and word-wide: the length (the
/// words then hold the whole name up to 16 bytes), then for a longer name every 8 bytes from
/// its start (the last few bytes were in the words). Saves the call to `memcmp` that slice
/// equality makes for every line.
#[inline(always)]
fn same_name(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.len() <= 16 {
        return true;
    }
    let (mut x, mut y) = (a, b);
    while let (Some((p, xs)), Some((q, ys))) =
        (x.split_first_chunk::<8>(), y.split_first_chunk::<8>())
    {
        if u64::from_le_bytes(*p) != u64::from_le_bytes(*q) {
            return false;
        }
        (x, y) = (xs, ys);
    }
    true
}

/// Implemented by every key enum; lets the file parser stay generic.
pub(crate) trait KeySet: Copy + PartialEq + 'static {
    /// The record holding values of these keys.
    type Props;
    /// Looks a sysfs name up.
    fn lookup(name: &[u8]) -> Option<Self>;
    /// The key at `position` of the kernel's print order and the length of its name, when
    /// `text` starts with that name.
    fn expect(position: usize, text: &[u8]) -> Option<(Self, usize)>;
    /// The keys whose value is a list of bits, not a number (`sibling_map`).
    const LISTS: &'static [Self];
    /// The key's position in the kernel's print order.
    fn position(self) -> usize;
    /// Stores a value. `Ok(true)` when the key had been seen before in this record.
    fn store(props: &mut Self::Props, key: Self, value: u64) -> Result<bool, OutOfRange>;
    /// The key as a [`KeyId`] for warnings.
    fn id(self) -> KeyId;
}

macro_rules! key_set {
    (
        $(#[$kmeta:meta])*
        enum $Key:ident;
        $(#[$pmeta:meta])*
        struct $Props:ident;
        presence $P:ty;
        slots $SLOTS:literal;
        id $IdVariant:ident;
        keys {
            $( $(#[$vmeta:meta])* $Variant:ident, $field:ident, $name:literal, $ty:ident; )+
        }
        extra {
            $( $(#[$xmeta:meta])* $XVariant:ident, $xname:literal; )*
        }
    ) => {
        $(#[$kmeta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[repr(u8)]
        pub enum $Key {
            $( $(#[$vmeta])* #[doc = concat!("`", $name, "`")] $Variant, )+
            $( $(#[$xmeta])* #[doc = concat!("`", $xname, "`")] $XVariant, )*
        }

        impl $Key {
            /// Every key, in the order the kernel prints them.
            pub const ALL: &'static [$Key] = &[$($Key::$Variant,)+ $($Key::$XVariant,)*];
            /// How many keys there are.
            pub const COUNT: usize = Self::ALL.len();
            const NAMES: &'static [&'static str] = &[$($name,)+ $($xname,)*];
            const INDEX: KeyIndex<$SLOTS, { Self::NAMES.len() }> = KeyIndex::build(Self::NAMES);

            /// The key's name in the sysfs file.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $( Self::$Variant => $name, )+
                    $( Self::$XVariant => $xname, )*
                }
            }

            /// The key with this sysfs name, if it is one the kernel prints.
            #[must_use]
            #[inline]
            pub fn from_name(name: &[u8]) -> Option<Self> {
                Self::INDEX.find(Self::NAMES, name).and_then(|i| Self::ALL.get(i).copied())
            }

            /// The key's position in [`Self::ALL`].
            #[must_use]
            pub const fn position(self) -> usize {
                self as usize
            }

            /// The value's width (`%u` or `%llu`); `None` for a key whose value is not a number.
            #[must_use]
            pub const fn width(self) -> Option<Width> {
                match self {
                    $( Self::$Variant => Some(<$ty as FieldValue>::WIDTH), )+
                    $( Self::$XVariant => None, )*
                }
            }

            #[inline]
            const fn bit(self) -> $P {
                1 << (self as u32)
            }
        }

        impl core::fmt::Display for $Key {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.name())
            }
        }

        $(#[$pmeta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        pub struct $Props {
            present: $P,
            $( $field: $ty, )+
        }

        impl Default for $Props {
            fn default() -> Self {
                Self::EMPTY
            }
        }

        impl $Props {
            /// A record in which no key is present.
            pub const EMPTY: Self = Self { present: 0, $( $field: 0, )+ };

            $(
                #[doc = concat!("`", $name, "`, or `None` when the file did not contain it.")]
                #[must_use]
                #[inline]
                pub const fn $field(&self) -> Option<$ty> {
                    if self.present & $Key::$Variant.bit() != 0 { Some(self.$field) } else { None }
                }
            )+

            /// The value of `key` widened to `u64`, or `None` when the file did not contain it
            /// (or when the key's value is not a number).
            #[must_use]
            pub const fn get(&self, key: $Key) -> Option<u64> {
                match key {
                    $( $Key::$Variant => match self.$field() {
                        Some(v) => Some(v as u64),
                        None => None,
                    }, )+
                    $( $Key::$XVariant => None, )*
                }
            }

            /// Whether the file contained `key`.
            #[must_use]
            pub const fn contains(&self, key: $Key) -> bool {
                self.present & key.bit() != 0
            }

            /// How many distinct keys the file contained.
            #[must_use]
            pub const fn present_count(&self) -> u32 {
                self.present.count_ones()
            }

            /// The keys the file contained, in kernel order.
            pub fn present_keys(&self) -> impl Iterator<Item = $Key> + '_ {
                $Key::ALL.iter().copied().filter(|k| self.contains(*k))
            }

            /// `(key, value)` for each numeric key the file contained, in kernel order.
            pub fn iter(&self) -> impl Iterator<Item = ($Key, u64)> + '_ {
                $Key::ALL.iter().filter_map(|k| Some((*k, self.get(*k)?)))
            }

            /// Stores a value, marking the key present. `Ok(true)` if it was already present.
            pub(crate) fn set(&mut self, key: $Key, value: u64) -> Result<bool, OutOfRange> {
                match key {
                    $( $Key::$Variant => {
                        self.$field = FieldValue::from_u64(value).ok_or(OutOfRange)?;
                    } )+
                    $( $Key::$XVariant => {} )*
                }
                Ok(self.mark(key))
            }

            /// Marks `key` present; `true` if it already was.
            #[inline]
            pub(crate) fn mark(&mut self, key: $Key) -> bool {
                let dup = self.present & key.bit() != 0;
                self.present |= key.bit();
                dup
            }
        }

        impl KeySet for $Key {
            type Props = $Props;
            const LISTS: &'static [Self] = &[$($Key::$XVariant,)*];
            #[inline]
            fn lookup(name: &[u8]) -> Option<Self> {
                Self::from_name(name)
            }
            #[inline(always)]
            fn expect(position: usize, text: &[u8]) -> Option<(Self, usize)> {
                let len = Self::INDEX.starts(Self::NAMES, position, text)?;
                Some((*Self::ALL.get(position)?, len))
            }
            #[inline(always)]
            fn position(self) -> usize {
                self as usize
            }
            #[inline]
            fn store(props: &mut $Props, key: Self, value: u64) -> Result<bool, OutOfRange> {
                props.set(key, value)
            }
            #[inline]
            fn id(self) -> KeyId {
                KeyId::$IdVariant(self)
            }
        }
    };
}

key_set! {
    /// A key of `system_properties` (KERNEL-CONTRACT §1.3).
    enum SystemKey;
    /// The values of `system_properties`.
    struct SystemProperties;
    presence u8;
    slots 8;
    id System;
    keys {
        /// ACPI/CRAT OEM table id, as a little-endian u64.
        PlatformOem, platform_oem, "platform_oem", u64;
        /// ACPI/CRAT OEM id (6 bytes), as a little-endian u64.
        PlatformId, platform_id, "platform_id", u64;
        /// OEM revision.
        PlatformRev, platform_rev, "platform_rev", u64;
    }
    extra {}
}

key_set! {
    /// A key of `nodes/N/properties` (KERNEL-CONTRACT §1.5), in kernel print order.
    enum NodeKey;
    /// The values of `nodes/N/properties`: one typed field per key the kernel prints.
    struct NodeProperties;
    presence u64;
    slots 256;
    id Node;
    keys {
        /// Logical CPUs (0 on a dGPU node).
        CpuCoresCount, cpu_cores_count, "cpu_cores_count", u32;
        /// SIMDs (printed as 0 unless the node has a GPU).
        SimdCount, simd_count, "simd_count", u32;
        /// Memory banks the kernel reports.
        MemBanksCount, mem_banks_count, "mem_banks_count", u32;
        /// Caches the kernel reports.
        CachesCount, caches_count, "caches_count", u32;
        /// IO links the kernel reports.
        IoLinksCount, io_links_count, "io_links_count", u32;
        /// P2P links the kernel reports (kernels from 5.x).
        P2pLinksCount, p2p_links_count, "p2p_links_count", u32;
        /// First CPU core id.
        CpuCoreIdBase, cpu_core_id_base, "cpu_core_id_base", u32;
        /// First SIMD id.
        SimdIdBase, simd_id_base, "simd_id_base", u32;
        /// Maximum waves per SIMD.
        MaxWavesPerSimd, max_waves_per_simd, "max_waves_per_simd", u32;
        /// LDS size in KiB.
        LdsSizeInKb, lds_size_in_kb, "lds_size_in_kb", u32;
        /// GDS size in KiB.
        GdsSizeInKb, gds_size_in_kb, "gds_size_in_kb", u32;
        /// Global wave sync resources.
        NumGws, num_gws, "num_gws", u32;
        /// Wavefront size.
        WaveFrontSize, wave_front_size, "wave_front_size", u32;
        /// Shader arrays (multiplied by the XCC count on current kernels).
        ArrayCount, array_count, "array_count", u32;
        /// Shader arrays per engine.
        SimdArraysPerEngine, simd_arrays_per_engine, "simd_arrays_per_engine", u32;
        /// CUs per shader array.
        CuPerSimdArray, cu_per_simd_array, "cu_per_simd_array", u32;
        /// SIMDs per CU.
        SimdPerCu, simd_per_cu, "simd_per_cu", u32;
        /// Maximum scratch slots per CU.
        MaxSlotsScratchCu, max_slots_scratch_cu, "max_slots_scratch_cu", u32;
        /// gfx version, decimal `MMmmss` (0 on CPU nodes).
        GfxTargetVersion, gfx_target_version, "gfx_target_version", u32;
        /// PCI vendor id.
        VendorId, vendor_id, "vendor_id", u32;
        /// PCI device id.
        DeviceId, device_id, "device_id", u32;
        /// PCI `bus << 8 | devfn` (partitions differ in the low bits).
        LocationId, location_id, "location_id", u32;
        /// PCI domain.
        Domain, domain, "domain", u32;
        /// N of `/dev/dri/renderD<N>`.
        DrmRenderMinor, drm_render_minor, "drm_render_minor", u32;
        /// XGMI hive id (0 when none).
        HiveId, hive_id, "hive_id", u64;
        /// SDMA engines.
        NumSdmaEngines, num_sdma_engines, "num_sdma_engines", u32;
        /// XGMI SDMA engines.
        NumSdmaXgmiEngines, num_sdma_xgmi_engines, "num_sdma_xgmi_engines", u32;
        /// SDMA queues per engine.
        NumSdmaQueuesPerEngine, num_sdma_queues_per_engine, "num_sdma_queues_per_engine", u32;
        /// Compute queues.
        NumCpQueues, num_cp_queues, "num_cp_queues", u32;
        /// Context-save area size.
        CwsrSize, cwsr_size, "cwsr_size", u32;
        /// Control stack size.
        CtlStackSize, ctl_stack_size, "ctl_stack_size", u32;
        /// Maximum engine clock (MHz), GPU nodes only.
        MaxEngineClkFcompute, max_engine_clk_fcompute, "max_engine_clk_fcompute", u32;
        /// Always 0 on current kernels; the VRAM size on 2018-era drivers.
        LocalMemSize, local_mem_size, "local_mem_size", u64;
        /// MEC firmware version.
        FwVersion, fw_version, "fw_version", u32;
        /// `HSA_CAP_*` bits.
        Capability, capability, "capability", u32;
        /// `HSA_CAP2_*` bits.
        Capability2, capability2, "capability2", u32;
        /// `HSA_DBG_*` bits.
        DebugProp, debug_prop, "debug_prop", u64;
        /// SDMA firmware version.
        SdmaFwVersion, sdma_fw_version, "sdma_fw_version", u32;
        /// Unique id (per partition when partitioned).
        UniqueId, unique_id, "unique_id", u64;
        /// XCCs in this node.
        NumXcc, num_xcc, "num_xcc", u32;
        /// CPU maximum clock (MHz), printed on every node.
        MaxEngineClkCcompute, max_engine_clk_ccompute, "max_engine_clk_ccompute", u32;
    }
    extra {}
}

key_set! {
    /// A key of `nodes/N/mem_banks/M/properties` (KERNEL-CONTRACT §1.6).
    enum MemBankKey;
    /// The values of one memory bank's `properties`.
    struct MemBankProperties;
    presence u8;
    slots 16;
    id MemBank;
    keys {
        /// `HSA_MEM_HEAP_TYPE_*` (see [`HeapType`](super::HeapType)).
        HeapType, heap_type, "heap_type", u32;
        /// Size in bytes.
        SizeInBytes, size_in_bytes, "size_in_bytes", u64;
        /// `HSA_MEM_FLAGS_*`.
        Flags, flags, "flags", u32;
        /// Bus width in bits.
        Width, width, "width", u32;
        /// Maximum memory clock (MHz).
        MemClkMax, mem_clk_max, "mem_clk_max", u32;
    }
    extra {}
}

key_set! {
    /// A key of `nodes/N/caches/C/properties` (KERNEL-CONTRACT §1.7).
    ///
    /// `sibling_map` is a list, not a number: [`CacheProperties::get`] returns `None` for it;
    /// read it with [`Cache::sibling_map`](super::Cache::sibling_map).
    enum CacheKey;
    /// The numeric values of one cache's `properties`.
    struct CacheProperties;
    presence u16;
    slots 32;
    id Cache;
    keys {
        /// First processor id sharing the cache.
        ProcessorIdLow, processor_id_low, "processor_id_low", u32;
        /// Cache level.
        Level, level, "level", u32;
        /// Size in KiB.
        Size, size, "size", u32;
        /// Line size in bytes.
        CacheLineSize, cache_line_size, "cache_line_size", u32;
        /// Lines per tag.
        CacheLinesPerTag, cache_lines_per_tag, "cache_lines_per_tag", u32;
        /// Associativity.
        Association, association, "association", u32;
        /// Latency.
        Latency, latency, "latency", u32;
        /// `HSA_CACHE_TYPE_*` bits.
        Type, cache_type, "type", u32;
    }
    extra {
        /// Comma-separated 0/1 bits.
        SiblingMap, "sibling_map";
    }
}

key_set! {
    /// A key of `nodes/N/io_links/L/properties` and `p2p_links/L/properties`
    /// (KERNEL-CONTRACT §1.8).
    enum LinkKey;
    /// The values of one link's `properties`.
    struct LinkProperties;
    presence u16;
    slots 64;
    id Link;
    keys {
        /// `HSA_IOLINK_TYPE_*` (see [`IoLinkType`](super::IoLinkType)).
        Type, link_type, "type", u32;
        /// Version major.
        VersionMajor, version_major, "version_major", u32;
        /// Version minor.
        VersionMinor, version_minor, "version_minor", u32;
        /// Source node (sysfs id).
        NodeFrom, node_from, "node_from", u32;
        /// Destination node (sysfs id).
        NodeTo, node_to, "node_to", u32;
        /// Weight (NUMA distance).
        Weight, weight, "weight", u32;
        /// Minimum latency.
        MinLatency, min_latency, "min_latency", u32;
        /// Maximum latency.
        MaxLatency, max_latency, "max_latency", u32;
        /// Minimum bandwidth (MB/s).
        MinBandwidth, min_bandwidth, "min_bandwidth", u32;
        /// Maximum bandwidth (MB/s).
        MaxBandwidth, max_bandwidth, "max_bandwidth", u32;
        /// Recommended transfer size.
        RecommendedTransferSize, recommended_transfer_size, "recommended_transfer_size", u32;
        /// Recommended SDMA engines (kernels newer than 6.1).
        RecommendedSdmaEngineIdMask, recommended_sdma_engine_id_mask,
            "recommended_sdma_engine_id_mask", u32;
        /// `CRAT_IOLINK_FLAGS_*`.
        Flags, flags, "flags", u32;
    }
    extra {}
}

/// A known key of any file, as named in warnings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum KeyId {
    /// A `system_properties` key.
    System(SystemKey),
    /// A node `properties` key.
    Node(NodeKey),
    /// A memory bank key.
    MemBank(MemBankKey),
    /// A cache key.
    Cache(CacheKey),
    /// An IO/P2P link key.
    Link(LinkKey),
}

impl KeyId {
    /// The key's sysfs name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::System(k) => k.name(),
            Self::Node(k) => k.name(),
            Self::MemBank(k) => k.name(),
            Self::Cache(k) => k.name(),
            Self::Link(k) => k.name(),
        }
    }
}

impl core::fmt::Display for KeyId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<K: KeySet + core::fmt::Debug + PartialEq>(
        all: &[K],
        name: fn(K) -> &'static str,
    ) {
        for k in all {
            assert_eq!(K::lookup(name(*k).as_bytes()), Some(*k), "{k:?}");
        }
    }

    #[test]
    fn key_counts_match_the_kernel() {
        assert_eq!(NodeKey::COUNT, 41);
        assert_eq!(MemBankKey::COUNT, 5);
        assert_eq!(CacheKey::COUNT, 9);
        assert_eq!(LinkKey::COUNT, 13);
        assert_eq!(SystemKey::COUNT, 3);
    }

    #[test]
    fn every_name_round_trips() {
        round_trip(NodeKey::ALL, NodeKey::name);
        round_trip(MemBankKey::ALL, MemBankKey::name);
        round_trip(CacheKey::ALL, CacheKey::name);
        round_trip(LinkKey::ALL, LinkKey::name);
        round_trip(SystemKey::ALL, SystemKey::name);
        for (i, k) in NodeKey::ALL.iter().enumerate() {
            assert_eq!(k.position(), i);
        }
    }

    #[test]
    fn unknown_names_are_rejected() {
        for name in [
            &b""[..],
            b"family_id",
            b"gpu_family",
            b"simd_coun",
            b"simd_countt",
            b"SIMD_COUNT",
            b"used_memory",
            b"\xff\xfe",
        ] {
            assert_eq!(NodeKey::from_name(name), None);
            assert_eq!(LinkKey::from_name(name), None);
        }
        // Names of another file kind are not keys of this one.
        assert_eq!(NodeKey::from_name(b"heap_type"), None);
        assert_eq!(MemBankKey::from_name(b"flags"), Some(MemBankKey::Flags));
        assert_eq!(LinkKey::from_name(b"flags"), Some(LinkKey::Flags));
        assert_eq!(CacheKey::from_name(b"sibling_map"), Some(CacheKey::SiblingMap));
    }

    /// Changing any one byte of a known name (its middle too, past the 16 bytes the hash
    /// words hold) gives a name that is not looked up as a key.
    #[test]
    fn a_name_with_one_byte_changed_is_not_a_key() {
        for key in NodeKey::ALL {
            let name = key.name().as_bytes();
            for i in 0..name.len() {
                let mut other = name.to_vec();
                other[i] ^= 0x01;
                let found = NodeKey::from_name(&other);
                assert!(found.is_none() || found.is_some_and(|k| k.name().as_bytes() == other));
            }
            assert!(same_name(name, name));
            assert!(!same_name(name, &name[..name.len() - 1]));
            assert!(NodeKey::from_name(&name[..name.len() - 1]).is_none_or(|k| k != *key));
        }
        assert!(NodeKey::ALL.iter().any(|k| k.name().len() > 24), "long names are covered");
    }

    #[test]
    fn widths_follow_the_kernel_formats() {
        let u64_keys: [NodeKey; 4] =
            [NodeKey::HiveId, NodeKey::LocalMemSize, NodeKey::DebugProp, NodeKey::UniqueId];
        for k in NodeKey::ALL {
            let want = if u64_keys.contains(k) { Width::U64 } else { Width::U32 };
            assert_eq!(k.width(), Some(want), "{k:?}");
        }
        assert_eq!(MemBankKey::SizeInBytes.width(), Some(Width::U64));
        assert_eq!(CacheKey::SiblingMap.width(), None);
    }

    #[test]
    fn set_get_presence_and_range() {
        let mut p = NodeProperties::EMPTY;
        assert_eq!(p.simd_count(), None);
        assert_eq!(p.set(NodeKey::SimdCount, 80), Ok(false));
        assert_eq!(p.simd_count(), Some(80));
        assert_eq!(p.get(NodeKey::SimdCount), Some(80));
        assert_eq!(p.set(NodeKey::SimdCount, 81), Ok(true));
        assert_eq!(p.set(NodeKey::SimdCount, u64::from(u32::MAX) + 1), Err(OutOfRange));
        assert_eq!(p.simd_count(), Some(81));
        assert_eq!(p.set(NodeKey::HiveId, u64::MAX), Ok(false));
        assert_eq!(p.hive_id(), Some(u64::MAX));
        assert_eq!(p.present_count(), 2);
        let keys: heapless::Vec<NodeKey, 4> = p.present_keys().collect();
        assert_eq!(&keys[..], &[NodeKey::SimdCount, NodeKey::HiveId]);
    }
}
