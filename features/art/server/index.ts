export { handleArtRequest } from "./art-api";
