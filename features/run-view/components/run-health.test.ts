import { describe, expect, it } from "vitest";
import { ordinal } from "@/components/ui/format";
import { fieldOfError } from "@/features/runners";

describe("queue place and register errors as the page words them", () => {
  it("ordinals", () => {
    expect([1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111].map(ordinal)).toEqual(["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"]);
  });
  it("a server error naming a field lands on that field", () => {
    expect(fieldOfError("token: the runner at http://x refused this token")).toEqual({ field: "token", text: "the runner at http://x refused this token" });
    expect(fieldOfError("url: no runner answered at http://x (ECONNREFUSED)")).toMatchObject({ field: "url" });
    expect(fieldOfError("something else: broke")).toEqual({ field: null, text: "something else: broke" });
  });
});
