/** What the experiments feature accepts, browser-safe: the editor and other features validate with the same schemas. */
import { z } from "zod";
import { ExperimentFiles } from "@contracts";
import { multiLine, oneLine } from "@contracts/text-rules";

/** The files of one experiment (the contract caps their size and names: 8 MB, scenario/reward/tasks/config/lib). */
export const FilesInput = ExperimentFiles;
/** An experiment's name: unique in its workspace (a taken one is a CONFLICT naming it). */
export const ExperimentName = oneLine(z.string().trim().min(1, "a name is required").max(120, "a name has at most 120 characters"));
/** What an experiment is for: text of several lines. */
export const ExperimentDescription = multiLine(z.string().max(2000));
/** The version the editor loaded: a newer version with other files makes the write a CONFLICT (stale tab). */
export const BaseVersion = z.number().int().min(1).optional();
