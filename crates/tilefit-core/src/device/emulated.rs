//! What a device looks like to host code under emulation (`tilefit capture`): the values
//! `torch.cuda.get_device_properties()`, `get_device_capability()`, `get_device_name()` and
//! Triton's `utils.get_device_properties()` answer, each read from the table. A value the table
//! lacks is `None`, and the emulation says so when host code asks for it; nothing is invented.

use serde::Serialize;

use super::table::{Backend, DeviceTable, Sourced};
use super::target::TargetDevice;

/// One emulated device, as the emulation process receives it (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct EmulatedDevice {
    /// The device as the user named it (`rtx-pro-6000`).
    pub key: String,
    /// The name it reports (`NVIDIA RTX PRO 6000 Blackwell Workstation Edition`); `None` for an
    /// arch named alone, or a product whose reported name the table has no source for.
    pub name: Option<String>,
    /// `sm_120`, `gfx942`.
    pub arch: String,
    /// `cuda` or `hip`.
    pub backend: String,
    /// Compute capability major (HIP: the gfx version's major, as HIP reports it).
    pub major: u32,
    /// Compute capability minor.
    pub minor: u32,
    /// SMs (CUs), where sourced.
    pub multiprocessor_count: Option<u32>,
    /// Threads per warp (wavefront).
    pub warp_size: u32,
    /// Per-block opt-in shared memory: `shared_memory_per_block_optin`, Triton's `max_shared_mem`.
    pub smem_per_block_optin: u32,
    /// Shared memory per SM.
    pub smem_per_sm: u32,
    /// Shared memory per block without opting in.
    pub smem_per_block_default: u32,
    /// 32-bit registers per SM.
    pub regs_per_sm: Option<u32>,
    /// 32-bit registers per block (Triton's `max_num_regs`).
    pub regs_per_block: Option<u32>,
    /// Threads per SM.
    pub max_threads_per_sm: Option<u32>,
    /// Threads per block.
    pub max_threads_per_block: u32,
    /// For an arch named alone: the product of that arch the emulation answers as (its name and
    /// SM count), the budget class's default-fleet product first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub represented_by: Option<String>,
}

/// Why a target cannot be emulated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot emulate `{device}`: {why}")]
pub struct NotEmulable {
    /// The device as named.
    pub device: String,
    /// Why.
    pub why: String,
}

impl crate::hint::Hint for NotEmulable {
    fn hint(&self) -> Option<String> {
        Some("name a device of `tilefit devices` (a product, or an arch such as sm_120)".to_owned())
    }
}

fn value<T: Copy>(sourced: Option<&Sourced<T>>) -> Option<T> {
    sourced.map(|s| s.value)
}

/// `(major, minor)` of an arch: CUDA's compute capability (`12.0`); for AMD the gfx version as HIP
/// reports it in `major`/`minor` (gfx942: 9, 4; gfx1100: 11, 0): the digits before the last two,
/// then the next-to-last.
fn capability(arch: &str, compute_capability: Option<&str>) -> Option<(u32, u32)> {
    if let Some(cc) = compute_capability {
        let (major, minor) = cc.split_once('.')?;
        return Some((major.parse().ok()?, minor.parse().ok()?));
    }
    let digits = arch.strip_prefix("gfx")?;
    if digits.len() < 3 {
        return None;
    }
    let (major, rest) = digits.split_at(digits.len() - 2);
    let minor = rest.chars().next()?.to_digit(16)?;
    Some((major.parse().ok()?, minor))
}

/// `(major, minor)` of an arch of the table (`sm_120`: its sourced compute capability, 12.0).
pub fn capability_of(table: &DeviceTable, arch: &str) -> Option<(u32, u32)> {
    capability(arch, table.arch(arch)?.compute_capability.as_deref())
}

impl EmulatedDevice {
    /// The emulated form of `target` (already resolved against `table`).
    pub fn of(table: &DeviceTable, target: &TargetDevice) -> Result<EmulatedDevice, NotEmulable> {
        let fail = |why: &str| NotEmulable {
            device: target.device.clone(),
            why: why.to_owned(),
        };
        let resolved = table
            .resolve(&target.device)
            .map_err(|e| fail(&e.to_string()))?;
        let arch = resolved.arch();
        // An arch named alone answers as a named product of that arch: host code asks for a
        // device name (every engine does), and a product's values are sourced.
        let represented = resolved.product().is_none().then(|| {
            let mut candidates: Vec<_> = table
                .products_of(&arch.arch)
                .filter(|p| p.reports.is_some())
                .collect();
            candidates.sort_by_key(|p| !p.default_fleet);
            candidates.into_iter().next()
        });
        let represented = represented.flatten();
        let product = resolved.product().or(represented);
        if product.and_then(|p| p.reports.as_ref()).is_none() {
            return Err(fail(&format!(
                "the table has no sourced reported name (what `torch.cuda.get_device_name()` returns) for {}",
                product.map_or_else(
                    || format!("any product of {}", arch.arch),
                    |p| p.name.clone()
                )
            )));
        }
        let (major, minor) = capability(&arch.arch, arch.compute_capability.as_deref())
            .ok_or_else(|| fail("the table gives no compute capability for its arch"))?;
        Ok(EmulatedDevice {
            key: target.device.clone(),
            name: product.and_then(|p| p.reports.as_ref().map(|r| r.value.clone())),
            arch: arch.arch.clone(),
            backend: match arch.backend {
                Backend::Cuda => "cuda",
                Backend::Hip => "hip",
            }
            .to_owned(),
            major,
            minor,
            multiprocessor_count: product.and_then(|p| value(p.sm_count.as_ref())),
            warp_size: arch.warp_size.value,
            smem_per_block_optin: arch.smem_per_block_optin.value,
            smem_per_sm: arch.smem_per_sm.value,
            smem_per_block_default: arch.smem_per_block_default.value,
            regs_per_sm: value(arch.regs_per_sm.as_ref()),
            regs_per_block: value(arch.regs_per_block.as_ref()),
            max_threads_per_sm: value(arch.max_threads_per_sm.as_ref()),
            max_threads_per_block: arch.max_threads_per_block.value,
            represented_by: represented.map(|p| p.name.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_of_cuda_and_amd_archs() {
        assert_eq!(capability("sm_120", Some("12.0")), Some((12, 0)));
        assert_eq!(capability("gfx942", None), Some((9, 4)));
        assert_eq!(capability("gfx90a", None), Some((9, 0)));
        assert_eq!(capability("gfx1100", None), Some((11, 0)));
        assert_eq!(capability("gfx1151", None), Some((11, 5)));
    }

    #[test]
    fn every_device_emulates_with_a_sourced_name_or_is_refused_naming_it() {
        let table = DeviceTable::builtin().unwrap();
        let mut names: Vec<String> = table.products().iter().map(|p| p.name.clone()).collect();
        names.extend(table.archs().iter().map(|a| a.arch.clone()));
        let mut refused = Vec::new();
        for name in &names {
            let targets = TargetDevice::resolve(table, std::slice::from_ref(name)).unwrap();
            match EmulatedDevice::of(table, &targets[0]) {
                Ok(device) => assert!(device.name.is_some(), "{name}"),
                Err(e) => {
                    assert!(e.why.contains("reported name"), "{name}: {e}");
                    refused.push(name.clone());
                }
            }
        }
        // Every arch answers (as a named product of its arch); the products the table has no
        // sourced name for are few, and each is refused before any work.
        assert!(
            table.archs().iter().all(|a| !refused.contains(&a.arch)),
            "{refused:?}"
        );
        assert!(refused.len() * 4 < names.len(), "{refused:?}");
        let targets = TargetDevice::resolve(table, &["sm_120".to_owned()]).unwrap();
        let sm120 = EmulatedDevice::of(table, &targets[0]).unwrap();
        assert!(sm120.represented_by.is_some());
        assert_eq!(sm120.smem_per_block_optin, 101_376);
    }

    #[test]
    fn every_value_comes_from_the_table() {
        let table = DeviceTable::builtin().unwrap();
        let targets = TargetDevice::resolve(
            table,
            &[
                "rtx-pro-6000".to_owned(),
                "mi300x".to_owned(),
                "sm_90".to_owned(),
            ],
        )
        .unwrap();
        let rtx = EmulatedDevice::of(table, &targets[0]).unwrap();
        assert_eq!(
            rtx.name.as_deref(),
            Some("NVIDIA RTX PRO 6000 Blackwell Workstation Edition")
        );
        assert_eq!(
            (rtx.major, rtx.minor, rtx.backend.as_str()),
            (12, 0, "cuda")
        );
        assert_eq!(rtx.smem_per_block_optin, 101_376);
        assert_eq!(rtx.multiprocessor_count, Some(188));
        let mi = EmulatedDevice::of(table, &targets[1]).unwrap();
        assert_eq!(
            (
                mi.arch.as_str(),
                mi.backend.as_str(),
                mi.major,
                mi.minor,
                mi.warp_size
            ),
            ("gfx942", "hip", 9, 4, 64)
        );
        assert_eq!(mi.name.as_deref(), Some("AMD Instinct MI300X"));
        // An arch named alone answers as a named product of its arch, and says which.
        let sm90 = EmulatedDevice::of(table, &targets[2]).unwrap();
        assert_eq!(
            (sm90.name.as_deref(), sm90.multiprocessor_count),
            (Some("NVIDIA H100 80GB HBM3"), Some(132))
        );
        assert_eq!(sm90.represented_by.as_deref(), Some("H100 SXM"));
        assert_eq!(sm90.smem_per_block_optin, 232_448);
    }
}
