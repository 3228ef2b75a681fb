export { handleTinkerRequest, SERVED_SDK_VERSION } from "./tinker-api";
