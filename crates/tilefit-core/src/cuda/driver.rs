//! The CUDA driver API through dlopen: the handful of functions `devices --live` and `verify`
//! need, resolved from `libcuda.so.1` at run time. Attribute numbers are those of `cuda.h` (the
//! copy Triton vendors in `third_party/nvidia/backend/include/cuda.h`).
#![expect(
    unsafe_code,
    reason = "calling the CUDA driver's C API through dlopen is FFI"
)]

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};

use libloading::Library;

use super::{DriverVerdict, LiveDevice, LiveError};

type CuResult = c_int;
type CuDevice = c_int;
type CuContext = *mut c_void;
type CuModule = *mut c_void;
type CuFunction = *mut c_void;

const CUDA_SUCCESS: CuResult = 0;
const CUDA_ERROR_NO_DEVICE: CuResult = 100;

// CUdevice_attribute
const MAX_THREADS_PER_BLOCK: c_int = 1;
const MAX_SHARED_MEMORY_PER_BLOCK: c_int = 8;
const WARP_SIZE: c_int = 10;
const MAX_REGISTERS_PER_BLOCK: c_int = 12;
const MULTIPROCESSOR_COUNT: c_int = 16;
const MAX_THREADS_PER_MULTIPROCESSOR: c_int = 39;
const COMPUTE_CAPABILITY_MAJOR: c_int = 75;
const COMPUTE_CAPABILITY_MINOR: c_int = 76;
const MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: c_int = 81;
const MAX_REGISTERS_PER_MULTIPROCESSOR: c_int = 82;
const MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: c_int = 97;
const MAX_BLOCKS_PER_MULTIPROCESSOR: c_int = 106;
const RESERVED_SHARED_MEMORY_PER_BLOCK: c_int = 111;

// CUfunction_attribute
const FUNC_MAX_THREADS_PER_BLOCK: c_int = 0;
const FUNC_LOCAL_SIZE_BYTES: c_int = 3;
const FUNC_NUM_REGS: c_int = 4;
const FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;

/// Library names tried, in order.
const LIBRARIES: &[&str] = &["libcuda.so.1", "libcuda.so", "nvcuda.dll"];

struct Api {
    init: unsafe extern "C" fn(c_uint) -> CuResult,
    driver_get_version: unsafe extern "C" fn(*mut c_int) -> CuResult,
    device_get_count: unsafe extern "C" fn(*mut c_int) -> CuResult,
    device_get: unsafe extern "C" fn(*mut CuDevice, c_int) -> CuResult,
    device_get_name: unsafe extern "C" fn(*mut c_char, c_int, CuDevice) -> CuResult,
    device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, CuDevice) -> CuResult,
    primary_ctx_retain: unsafe extern "C" fn(*mut CuContext, CuDevice) -> CuResult,
    ctx_set_current: unsafe extern "C" fn(CuContext) -> CuResult,
    module_load_data: unsafe extern "C" fn(*mut CuModule, *const c_void) -> CuResult,
    module_unload: unsafe extern "C" fn(CuModule) -> CuResult,
    module_get_function: unsafe extern "C" fn(*mut CuFunction, CuModule, *const c_char) -> CuResult,
    func_set_attribute: unsafe extern "C" fn(CuFunction, c_int, c_int) -> CuResult,
    func_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, CuFunction) -> CuResult,
    occupancy: unsafe extern "C" fn(*mut c_int, CuFunction, c_int, usize) -> CuResult,
    get_error_name: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult,
}

/// The loaded driver.
pub struct Driver {
    api: Api,
    // Keeps the function pointers above valid; dropped last.
    _library: Library,
}

fn symbol<T: Copy>(library: &Library, name: &str) -> Result<T, LiveError> {
    // SAFETY: each symbol is looked up with the exact C signature cuda.h declares for it.
    unsafe {
        library
            .get::<T>(name.as_bytes())
            .map(|s| *s)
            .map_err(|_| LiveError::MissingSymbol(name.to_owned()))
    }
}

impl Driver {
    /// Open the driver library and initialise it.
    pub fn load() -> Result<Driver, LiveError> {
        let mut first_error: Option<String> = None;
        let mut library = None;
        for name in LIBRARIES {
            // SAFETY: loading the vendor's driver library runs its initialisers, which is what
            // every CUDA program does; no Rust invariants depend on them.
            match unsafe { Library::new(name) } {
                Ok(lib) => {
                    library = Some(lib);
                    break;
                }
                Err(e) => {
                    first_error.get_or_insert_with(|| e.to_string());
                }
            }
        }
        let library = library.ok_or_else(|| LiveError::NoDriver {
            tried: LIBRARIES.join(", "),
            reason: first_error.unwrap_or_default(),
        })?;
        let api = Api {
            init: symbol(&library, "cuInit")?,
            driver_get_version: symbol(&library, "cuDriverGetVersion")?,
            device_get_count: symbol(&library, "cuDeviceGetCount")?,
            device_get: symbol(&library, "cuDeviceGet")?,
            device_get_name: symbol(&library, "cuDeviceGetName")?,
            device_get_attribute: symbol(&library, "cuDeviceGetAttribute")?,
            primary_ctx_retain: symbol(&library, "cuDevicePrimaryCtxRetain")?,
            ctx_set_current: symbol(&library, "cuCtxSetCurrent")?,
            module_load_data: symbol(&library, "cuModuleLoadData")?,
            module_unload: symbol(&library, "cuModuleUnload")?,
            module_get_function: symbol(&library, "cuModuleGetFunction")?,
            func_set_attribute: symbol(&library, "cuFuncSetAttribute")?,
            func_get_attribute: symbol(&library, "cuFuncGetAttribute")?,
            occupancy: symbol(&library, "cuOccupancyMaxActiveBlocksPerMultiprocessor")?,
            get_error_name: symbol(&library, "cuGetErrorName")?,
        };
        let driver = Driver {
            api,
            _library: library,
        };
        // SAFETY: cuInit takes flags (0) and may be called more than once.
        let code = unsafe { (driver.api.init)(0) };
        if code == CUDA_ERROR_NO_DEVICE {
            return Err(LiveError::NoDevice);
        }
        driver.check("cuInit", code)?;
        Ok(driver)
    }

    fn check(&self, call: &'static str, code: CuResult) -> Result<(), LiveError> {
        if code == CUDA_SUCCESS {
            return Ok(());
        }
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: cuGetErrorName writes a pointer to a static string, or leaves it null.
        let named = unsafe { (self.api.get_error_name)(code, &raw mut name) } == CUDA_SUCCESS
            && !name.is_null();
        let name = if named {
            // SAFETY: non-null and NUL-terminated, owned by the driver for the process's life.
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned()
        } else {
            "an unknown error".to_owned()
        };
        Err(LiveError::Call { call, code, name })
    }

    fn attribute(&self, device: CuDevice, attribute: c_int) -> Result<i32, LiveError> {
        let mut value: c_int = 0;
        // SAFETY: writes one int for a valid device handle.
        let code = unsafe { (self.api.device_get_attribute)(&raw mut value, attribute, device) };
        self.check("cuDeviceGetAttribute", code)?;
        Ok(value)
    }

    fn device(&self, ordinal: i32) -> Result<CuDevice, LiveError> {
        let mut device: CuDevice = 0;
        // SAFETY: writes one device handle.
        let code = unsafe { (self.api.device_get)(&raw mut device, ordinal) };
        self.check("cuDeviceGet", code)?;
        Ok(device)
    }

    /// Every device the driver sees.
    pub fn devices(&self) -> Result<Vec<LiveDevice>, LiveError> {
        let mut count: c_int = 0;
        // SAFETY: writes one int.
        let code = unsafe { (self.api.device_get_count)(&raw mut count) };
        self.check("cuDeviceGetCount", code)?;
        if count == 0 {
            return Err(LiveError::NoDevice);
        }
        let mut version: c_int = 0;
        // SAFETY: writes one int.
        let code = unsafe { (self.api.driver_get_version)(&raw mut version) };
        self.check("cuDriverGetVersion", code)?;
        (0..count)
            .map(|ordinal| {
                let device = self.device(ordinal)?;
                let mut name = [0 as c_char; 256];
                // SAFETY: the buffer holds 256 chars and the driver NUL-terminates within it.
                let code = unsafe { (self.api.device_get_name)(name.as_mut_ptr(), 256, device) };
                self.check("cuDeviceGetName", code)?;
                // SAFETY: NUL-terminated by the driver (checked above).
                let name = unsafe { CStr::from_ptr(name.as_ptr()) }
                    .to_string_lossy()
                    .into_owned();
                let attribute = |a| self.attribute(device, a);
                let major = attribute(COMPUTE_CAPABILITY_MAJOR)?;
                let minor = attribute(COMPUTE_CAPABILITY_MINOR)?;
                Ok(LiveDevice {
                    ordinal,
                    name,
                    compute_capability: (major, minor),
                    arch: format!("sm_{major}{minor}"),
                    sm_count: attribute(MULTIPROCESSOR_COUNT)?,
                    smem_per_block_optin: attribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
                    smem_per_sm: attribute(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
                    smem_reserved_per_block: attribute(RESERVED_SHARED_MEMORY_PER_BLOCK)?,
                    smem_per_block_default: attribute(MAX_SHARED_MEMORY_PER_BLOCK)?,
                    regs_per_block: attribute(MAX_REGISTERS_PER_BLOCK)?,
                    regs_per_sm: attribute(MAX_REGISTERS_PER_MULTIPROCESSOR)?,
                    max_threads_per_sm: attribute(MAX_THREADS_PER_MULTIPROCESSOR)?,
                    max_threads_per_block: attribute(MAX_THREADS_PER_BLOCK)?,
                    max_blocks_per_sm: attribute(MAX_BLOCKS_PER_MULTIPROCESSOR)?,
                    warp_size: attribute(WARP_SIZE)?,
                    driver_version: version,
                })
            })
            .collect()
    }
}

/// The driver with one device's primary context current on this thread.
pub struct Session {
    driver: Driver,
}

impl Session {
    pub fn open(ordinal: i32) -> Result<Session, LiveError> {
        let driver = Driver::load()?;
        let device = driver.device(ordinal)?;
        let mut context: CuContext = std::ptr::null_mut();
        // SAFETY: retains the device's primary context (released when the process exits).
        let code = unsafe { (driver.api.primary_ctx_retain)(&raw mut context, device) };
        driver.check("cuDevicePrimaryCtxRetain", code)?;
        // SAFETY: a context the driver just returned.
        let code = unsafe { (driver.api.ctx_set_current)(context) };
        driver.check("cuCtxSetCurrent", code)?;
        Ok(Session { driver })
    }

    pub fn judge(
        &self,
        cubin: &[u8],
        kernel: &str,
        dynamic_shared: u32,
        threads: u32,
    ) -> Result<DriverVerdict, LiveError> {
        let api = &self.driver.api;
        let mut module: CuModule = std::ptr::null_mut();
        // SAFETY: the driver parses the cubin image; the buffer outlives the call.
        let code = unsafe { (api.module_load_data)(&raw mut module, cubin.as_ptr().cast()) };
        self.driver.check("cuModuleLoadData", code)?;
        let verdict = self.judge_loaded(module, kernel, dynamic_shared, threads);
        // SAFETY: unloads the module loaded above, once.
        let _ = unsafe { (api.module_unload)(module) };
        verdict
    }

    fn judge_loaded(
        &self,
        module: CuModule,
        kernel: &str,
        dynamic_shared: u32,
        threads: u32,
    ) -> Result<DriverVerdict, LiveError> {
        let api = &self.driver.api;
        let name = CString::new(kernel).map_err(|_| LiveError::Call {
            call: "cuModuleGetFunction",
            code: -1,
            name: "a kernel name with a NUL byte".to_owned(),
        })?;
        let mut function: CuFunction = std::ptr::null_mut();
        // SAFETY: module is loaded; name is NUL-terminated.
        let code = unsafe { (api.module_get_function)(&raw mut function, module, name.as_ptr()) };
        self.driver.check("cuModuleGetFunction", code)?;
        let attribute = |a: c_int| -> Option<i32> {
            let mut value: c_int = 0;
            // SAFETY: writes one int for a valid function handle.
            (unsafe { (api.func_get_attribute)(&raw mut value, a, function) } == CUDA_SUCCESS)
                .then_some(value)
        };
        let registers = attribute(FUNC_NUM_REGS);
        let local_bytes = attribute(FUNC_LOCAL_SIZE_BYTES);
        let max_threads_per_block = attribute(FUNC_MAX_THREADS_PER_BLOCK);
        // The driver refused a call: the verdict names the call's error.
        let refused = |name: String| DriverVerdict {
            accepted: false,
            blocks_per_sm: None,
            error: Some(name),
            registers,
            local_bytes,
            max_threads_per_block,
        };
        let size = c_int::try_from(dynamic_shared).unwrap_or(c_int::MAX);
        // SAFETY: sets an attribute on a valid function handle.
        let code =
            unsafe { (api.func_set_attribute)(function, FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, size) };
        if let Err(LiveError::Call { name, .. }) = self.driver.check("cuFuncSetAttribute", code) {
            return Ok(refused(name));
        }
        let mut blocks: c_int = 0;
        let block = c_int::try_from(threads).unwrap_or(c_int::MAX);
        // SAFETY: writes one int for a valid function handle.
        let code =
            unsafe { (api.occupancy)(&raw mut blocks, function, block, dynamic_shared as usize) };
        if let Err(LiveError::Call { name, .. }) = self
            .driver
            .check("cuOccupancyMaxActiveBlocksPerMultiprocessor", code)
        {
            return Ok(refused(name));
        }
        Ok(DriverVerdict {
            accepted: blocks > 0,
            blocks_per_sm: Some(blocks),
            error: (blocks == 0).then(|| "no block fits an SM (occupancy 0)".to_owned()),
            registers,
            local_bytes,
            max_threads_per_block,
        })
    }
}
