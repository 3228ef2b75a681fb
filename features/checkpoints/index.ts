export { CheckpointsButton } from "./components/checkpoint-chat";
